// Cross-origin access for browser clients (replicas.yaml `cors.allow_origins`). Off
// unless configured: then no response carries Access-Control-* headers and a preflight
// (OPTIONS) finds no route (405), so browsers keep other sites' pages from calling the
// API. With origins listed, a request whose Origin is one of them gets
// Access-Control-Allow-Origin, and its preflight a 204 granting the methods and headers
// it asks for; any other origin's preflight gets 403 and no grant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/http/server.h"

namespace sy::gateway {

class Cors {
 public:
  explicit Cors(std::vector<std::string> allow_origins);

  bool enabled() const { return !origins_.empty(); }

  // Adds `handler` for `method` `path` to `router`; when enabled, its responses carry the
  // CORS headers and the path answers preflights.
  void add(http::Router& router, http::Verb method, const std::string& path, http::Handler handler) const;

 private:
  // The Access-Control-Allow-Origin value for `origin`, or "" when it is not allowed.
  std::string allow_origin(std::string_view origin) const;
  void preflight(http::Exchange& ex) const;

  std::vector<std::string> origins_;
  bool any_ = false;  // "*" listed
};

}  // namespace sy::gateway
