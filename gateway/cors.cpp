#include "gateway/cors.h"

#include <algorithm>
#include <boost/beast/core/string.hpp>

namespace sy::gateway {
namespace {

std::string_view header(const http::Exchange& ex, boost::beast::http::field f) {
  auto it = ex.request().find(f);
  if (it == ex.request().end()) return {};
  return {it->value().data(), it->value().size()};
}

}  // namespace

Cors::Cors(std::vector<std::string> allow_origins) : origins_(std::move(allow_origins)) {
  any_ = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
}

std::string Cors::allow_origin(std::string_view origin) const {
  if (origin.empty()) return {};
  if (any_) return "*";
  // Origins compare as written by the browser: scheme, host and port, case-insensitive.
  for (const auto& o : origins_)
    if (boost::beast::iequals(o, origin)) return std::string(origin);
  return {};
}

void Cors::add(http::Router& router, http::Verb method, const std::string& path, http::Handler handler) const {
  if (!enabled()) return router.add(method, path, std::move(handler));
  router.add(method, path, [this, handler = std::move(handler)](std::shared_ptr<http::Exchange> ex) {
    const std::string allowed = allow_origin(header(*ex, boost::beast::http::field::origin));
    if (!allowed.empty()) {
      ex->add_header("Access-Control-Allow-Origin", allowed);
      ex->add_header("Access-Control-Expose-Headers", "Retry-After, x-switchyard-replica, x-switchyard-attempts");
    }
    ex->add_header("Vary", "Origin");
    handler(std::move(ex));
  });
  http::Status status;
  if (!router.find(http::Verb::options, path, status))
    router.add(http::Verb::options, path, [this](std::shared_ptr<http::Exchange> ex) { preflight(*ex); });
}

void Cors::preflight(http::Exchange& ex) const {
  using boost::beast::http::field;
  ex.add_header("Vary", "Origin");
  const std::string allowed = allow_origin(header(ex, field::origin));
  if (allowed.empty())
    return ex.respond_error(ApiError{403, "invalid_request_error", "cross-origin requests from this origin are not allowed", "", "cors_origin_denied"});
  ex.add_header("Access-Control-Allow-Origin", allowed);
  ex.add_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  // The page's own headers (an SDK adds some) are granted as asked: the origin is trusted.
  const std::string_view asked = header(ex, field::access_control_request_headers);
  ex.add_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type, X-Priority" : std::string(asked));
  ex.add_header("Access-Control-Max-Age", "600");
  ex.respond(http::Response(http::Status::no_content, 11));
}

}  // namespace sy::gateway
