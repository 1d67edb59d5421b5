# Writes gateway/dashboard.html into a C++ header as one raw string literal:
#   cmake -DINPUT=<dashboard.html> -DOUTPUT=<dir>/gateway/dashboard.h -P embed_dashboard.cmake
# The build runs it whenever the page changes (gateway/CMakeLists.txt), so the gateway
# binary serves the page without reading any file at run time.
if(NOT INPUT OR NOT OUTPUT)
  message(FATAL_ERROR "usage: cmake -DINPUT=page.html -DOUTPUT=header.h -P embed_dashboard.cmake")
endif()
file(READ "${INPUT}" page)
# The literal ends at the first )sy_dashboard" in the page, so the page must not hold one.
set(delimiter "sy_dashboard")
string(FIND "${page}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains ')${delimiter}\"', which would end the raw string early")
endif()
file(WRITE "${OUTPUT}" "// Generated from gateway/dashboard.html by gateway/embed_dashboard.cmake: edit the page, not this.
#pragma once

#include <string_view>

namespace sy::gateway {

// The operator dashboard served at GET /dashboard: one self-contained HTML page.
inline constexpr std::string_view kDashboardHtml = R\"${delimiter}(${page})${delimiter}\";

}  // namespace sy::gateway
")
