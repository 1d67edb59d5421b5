#include "bench/faultproxy/control_api.h"

#include <charconv>
#include <string_view>

#include "common/protocol/api_error.h"

namespace sy::faultproxy {

namespace bhttp = boost::beast::http;

namespace {

constexpr std::string_view kToxics = "/toxics";

ControlResponse error(const ControlRequest& req, const ApiError& e) {
  return json_response(req, static_cast<unsigned>(e.status), api_error_body(e));
}

ControlResponse ok(const ControlRequest& req, const Json& body, unsigned status = 200) {
  return json_response(req, status, body.dump());
}

ControlResponse not_allowed(const ControlRequest& req, std::string_view path, const char* allowed) {
  return error(req, ApiError{405,
                             "invalid_request_error",
                             "method " + std::string(req.method_string()) + " is not allowed on " +
                                 std::string(path) + " (allowed: " + allowed + ")",
                             {},
                             "method_not_allowed"});
}

ControlResponse add_toxic(FaultProxy& proxy, const ControlRequest& req) {
  Json body;
  if (auto e = parse_json_object(req.body(), body)) return error(req, *e);
  Toxic toxic;
  if (auto e = parse_toxic(body, toxic)) return error(req, *e);
  Json out;
  out["id"] = proxy.add_toxic(toxic);
  out.update(toxic_to_json(toxic));
  return ok(req, out, 201);
}

ControlResponse toxic_by_id(FaultProxy& proxy, const ControlRequest& req, std::string_view path,
                            std::string_view id_text) {
  if (req.method() != bhttp::verb::delete_) return not_allowed(req, path, "DELETE");
  uint64_t id = 0;
  const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (ec != std::errc() || end != id_text.data() + id_text.size() || id_text.empty())
    return error(req, ApiError::bad_request("toxic id '" + std::string(id_text) +
                                            "' is not a non-negative integer"));
  if (!proxy.remove_toxic(id))
    return error(req, ApiError{404,
                               "invalid_request_error",
                               "no toxic with id " + std::to_string(id),
                               {},
                               "toxic_not_found"});
  Json out;
  out["deleted"] = id;
  return ok(req, out);
}

}  // namespace

ControlResponse handle_control(FaultProxy& proxy, const ControlRequest& req) {
  std::string_view path = req.target();
  path = path.substr(0, path.find('?'));
  const auto verb = req.method();
  if (path == kToxics) {
    if (verb == bhttp::verb::get) return ok(req, proxy.toxics_json());
    if (verb == bhttp::verb::post) return add_toxic(proxy, req);
    if (verb == bhttp::verb::delete_) {
      Json out;
      out["deleted"] = proxy.clear_toxics();
      return ok(req, out);
    }
    return not_allowed(req, path, "GET, POST, DELETE");
  }
  if (path.size() > kToxics.size() + 1 && path.substr(0, kToxics.size() + 1) == "/toxics/")
    return toxic_by_id(proxy, req, path, path.substr(kToxics.size() + 1));
  if (path == "/reset-all") {
    if (verb != bhttp::verb::post) return not_allowed(req, path, "POST");
    Json out;
    out["reset"] = proxy.reset_all();
    return ok(req, out);
  }
  if (path == "/stats") {
    if (verb != bhttp::verb::get) return not_allowed(req, path, "GET");
    return ok(req, proxy.stats_json());
  }
  return error(req, ApiError{404,
                             "invalid_request_error",
                             "no route " + std::string(path) +
                                 " (routes: /toxics, /toxics/ID, /reset-all, /stats)",
                             {},
                             "not_found"});
}

}  // namespace sy::faultproxy
