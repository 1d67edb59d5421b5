#include "bench/faultproxy/fault_proxy.h"

#include <vector>

#include "bench/faultproxy/connection.h"

namespace sy::faultproxy {

namespace net = boost::asio;
using boost::system::error_code;

FaultProxy::FaultProxy(net::io_context& ioc, ProxyOptions options)
    : state_(std::make_shared<ProxyState>(std::move(options))),
      listener_(ioc, [this](tcp::socket socket) {
        std::make_shared<Connection>(std::move(socket), state_)->start();
      }) {}

FaultProxy::~FaultProxy() {
  stop();
}

std::string FaultProxy::listen(const tcp::endpoint& endpoint) {
  return listener_.listen(endpoint);
}

void FaultProxy::stop() {
  listener_.stop();
  reset_all();
}

uint64_t FaultProxy::add_toxic(const Toxic& toxic) {
  const uint64_t id = state_->next_toxic_id++;
  state_->toxics[id] = ToxicEntry{toxic, 0};
  toxics_changed();
  return id;
}

bool FaultProxy::remove_toxic(uint64_t id) {
  if (state_->toxics.erase(id) == 0) return false;
  toxics_changed();
  return true;
}

size_t FaultProxy::clear_toxics() {
  const size_t n = state_->toxics.size();
  state_->toxics.clear();
  toxics_changed();
  return n;
}

size_t FaultProxy::reset_all() {
  // Resetting drops connections from the map (in their destructors), so take them first.
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [id, weak] : state_->connections)
    if (auto c = weak.lock()) open.push_back(std::move(c));
  for (auto& c : open) c->reset();
  state_->stats.reset_by_request += open.size();
  return open.size();
}

void FaultProxy::toxics_changed() {
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [id, weak] : state_->connections)
    if (auto c = weak.lock()) open.push_back(std::move(c));
  for (auto& c : open) c->update_toxics();
}

Json FaultProxy::toxics_json() const {
  Json list = Json::array();
  for (const auto& [id, entry] : state_->toxics) {
    Json j;
    j["id"] = id;
    j.update(toxic_to_json(entry.toxic));
    j["applied"] = entry.applied;
    list.push_back(std::move(j));
  }
  Json out;
  out["toxics"] = std::move(list);
  return out;
}

Json FaultProxy::stats_json() const {
  const ProxyStats& s = state_->stats;
  Json j;
  j["connections_accepted"] = s.accepted;
  j["connections_open"] = s.open;
  j["connections_refused"] = s.refused;
  j["connections_reset_by_toxic"] = s.reset_by_toxic;
  j["connections_reset_by_request"] = s.reset_by_request;
  j["upstream_connect_failures"] = s.upstream_failures;
  j["bytes_up"] = s.bytes_up;
  j["bytes_down"] = s.bytes_down;
  j["bytes_discarded_up"] = s.discarded_up;
  j["bytes_discarded_down"] = s.discarded_down;
  Json applied = Json::object();
  for (const auto& [type, n] : s.applied) applied[toxic_type_name(type)] = n;
  j["toxics_applied"] = std::move(applied);
  return j;
}

}  // namespace sy::faultproxy
