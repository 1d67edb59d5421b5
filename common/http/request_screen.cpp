#include "common/http/request_screen.h"

#include <boost/beast/core/string.hpp>

namespace sy::http {

HeaderBlock scan_header_block(std::string_view bytes) {
  const size_t end = bytes.find("\r\n\r\n");
  const std::string_view block = bytes.substr(0, end == std::string_view::npos ? bytes.size() : end + 2);
  // A line break followed by a space or a tab continues the previous field line.
  for (size_t at = block.find("\r\n"); at != std::string_view::npos; at = block.find("\r\n", at + 2)) {
    if (at + 2 < block.size() && (block[at + 2] == ' ' || block[at + 2] == '\t')) return HeaderBlock::kFolded;
  }
  // A line ending in a bare LF: the parser refuses it (400) at once, no need to wait.
  for (size_t lf = block.find('\n'); lf != std::string_view::npos; lf = block.find('\n', lf + 1))
    if (lf == 0 || block[lf - 1] != '\r') return HeaderBlock::kComplete;
  if (end == std::string_view::npos) {
    // A fold may be split across reads: "\r\n" now, the space with the next bytes.
    return HeaderBlock::kIncomplete;
  }
  return HeaderBlock::kComplete;
}

std::optional<ApiError> unsupported_transfer_coding(const Request& request) {
  const auto [first, last] = request.equal_range(bhttp::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    std::string_view list(field->value().data(), field->value().size());
    while (!list.empty()) {
      const size_t comma = list.find(',');
      std::string_view coding = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
      if (coding.empty() || boost::beast::iequals(coding, "chunked")) continue;
      return ApiError{501, "invalid_request_error",
                      "transfer coding '" + echo_input(coding, 40) + "' is not implemented (only chunked is)", {},
                      "transfer_coding_not_implemented"};
    }
  }
  return std::nullopt;
}

}  // namespace sy::http
