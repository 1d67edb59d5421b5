// Checks on a request's framing that Beast's parser does not make, because a proxy in
// front may read the same bytes differently (request smuggling, RFC 9112 §6.1, §5.2):
// folded header lines (obs-fold) and transfer codings the server does not implement.
#pragma once

#include <optional>
#include <string_view>

#include "common/http/server.h"

namespace sy::http {

enum class HeaderBlock {
  kIncomplete,  // no blank line yet: read more
  kComplete,    // the request line and fields end with a blank line, none folded (or
                // a bare LF ends a line: the parser's to refuse)
  kFolded,      // a field line continues on the next line (obs-fold): 400
};

// Looks at the bytes read so far for the request's header block (request line and
// fields, up to the first blank line).
HeaderBlock scan_header_block(std::string_view bytes);

// 501 when Transfer-Encoding names a coding other than "chunked" (e.g. "gzip, chunked":
// Beast would read the body as plain chunked and drop the gzip). Nothing when the
// request has no Transfer-Encoding or only "chunked".
std::optional<ApiError> unsupported_transfer_coding(const Request& request);

}  // namespace sy::http
