// Path segments taken from a request target (GET /v1/models/{id}).
#pragma once

#include <string>
#include <string_view>

namespace sy::http {

// `%XX` escapes decoded (ids such as "org/name" arrive as "org%2Fname" from some
// clients); a '%' not followed by two hex digits stays as it is.
std::string percent_decode(std::string_view s);

}  // namespace sy::http
