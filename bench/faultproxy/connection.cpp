#include "bench/faultproxy/connection.h"

#include <algorithm>

namespace sy::faultproxy {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

// SO_LINGER 0 before close: the kernel sends RST instead of FIN.
void abort_socket(net::ip::tcp::socket& s) {
  if (!s.is_open()) return;
  error_code ec;
  s.set_option(net::socket_base::linger(true, 0), ec);
  s.close(ec);
}

bool resets_at_accept(const Toxic& t) {
  return t.type == ToxicType::kReset &&
         ((!t.bytes && !t.after_ms) || t.bytes == 0 || t.after_ms == 0);
}

template <typename T>
void keep_min(std::optional<T>& slot, T v) {
  slot = slot ? std::min(*slot, v) : v;
}

}  // namespace

Connection::Connection(tcp::socket client, std::shared_ptr<ProxyState> state)
    : state_(std::move(state)),
      id_(state_->next_connection_id++),
      client_(std::move(client)),
      upstream_(client_.get_executor()),
      up_(*this, kUp, client_, upstream_, state_->options.max_queue_bytes, state_->rng),
      down_(*this, kDown, upstream_, client_, state_->options.max_queue_bytes, state_->rng),
      connect_timer_(client_.get_executor()),
      reset_timer_(client_.get_executor()) {
  ++state_->stats.accepted;
  ++state_->stats.open;
}

Connection::~Connection() {
  --state_->stats.open;
  state_->connections.erase(id_);
}

bool Connection::meet(uint64_t id, ToxicEntry& entry) {
  seen_.insert(id);
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(state_->rng);
  if (!(u < entry.toxic.probability)) return false;
  ++entry.applied;
  ++state_->stats.applied[entry.toxic.type];
  applied_.push_back(Applied{id, entry.toxic, Clock::now(), {up_.forwarded(), down_.forwarded()}});
  return true;
}

void Connection::start() {
  state_->connections[id_] = weak_from_this();
  error_code ec;
  client_.set_option(tcp::no_delay(true), ec);
  for (auto& [id, entry] : state_->toxics) meet(id, entry);

  std::optional<std::chrono::milliseconds> reset_after;
  bool blackhole_up = false;
  for (const Applied& a : applied_) {
    if (a.toxic.type == ToxicType::kDown) {
      ++state_->stats.refused;
      client_.shutdown(tcp::socket::shutdown_both, ec);
      return close_gracefully();
    }
    if (resets_at_accept(a.toxic)) {
      ++state_->stats.reset_by_toxic;
      return reset();
    }
    if (a.toxic.type == ToxicType::kReset && a.toxic.after_ms)
      keep_min(reset_after, std::chrono::milliseconds(*a.toxic.after_ms));
    if (a.toxic.type == ToxicType::kBlackhole && (a.toxic.direction & kUp)) blackhole_up = true;
  }
  apply_faults();
  if (reset_after) {
    reset_timer_.expires_after(*reset_after);
    reset_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->closed_) return;
      ++self->state_->stats.reset_by_toxic;
      self->reset();
    });
  }
  if (blackhole_up) {
    // What the client sends goes nowhere, so the upstream is never contacted.
    down_.skip();
    up_.start();
    return;
  }
  connect_timer_.expires_after(state_->options.connect_timeout);
  connect_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->closed_ || self->connected_) return;
    self->upstream_.close(ec);  // on_connect sees the abort and resets the client
  });
  upstream_.async_connect(state_->options.upstream,
                          [self = shared_from_this()](error_code ec) { self->on_connect(ec); });
}

void Connection::on_connect(error_code ec) {
  if (closed_) return;
  connect_timer_.cancel();
  if (ec) {
    // The client sees a reset, as it would connecting to a dead host.
    ++state_->stats.upstream_failures;
    return reset();
  }
  connected_ = true;
  upstream_.set_option(tcp::no_delay(true), ec);
  up_.start();
  down_.start();
}

void Connection::update_toxics() {
  if (closed_) return;
  bool changed = false;
  for (auto& [id, entry] : state_->toxics)
    if (entry.toxic.affects_open_connections() && !seen_.count(id)) changed |= meet(id, entry);
  const auto gone = [this](const Applied& a) {
    return a.toxic.affects_open_connections() && !state_->toxics.count(a.id);
  };
  const size_t before = applied_.size();
  applied_.erase(std::remove_if(applied_.begin(), applied_.end(), gone), applied_.end());
  if (changed || applied_.size() != before) apply_faults();
}

void Connection::apply_faults() {
  for (Pipe* pipe : {&up_, &down_}) {
    const unsigned dir = pipe->direction();
    PipeFaults f;
    for (const Applied& a : applied_) {
      const Toxic& t = a.toxic;
      if (!(t.direction & dir)) continue;
      const uint64_t met_bytes = a.met_bytes[dir == kUp ? 0 : 1];
      switch (t.type) {
        case ToxicType::kLatency:
          f.latency += std::chrono::milliseconds(t.latency_ms);
          f.jitter += std::chrono::milliseconds(t.jitter_ms);
          break;
        case ToxicType::kBandwidth:
          f.rate = f.rate == 0 ? t.rate : std::min(f.rate, t.rate);
          break;
        case ToxicType::kStall:
          if (t.bytes || !t.after_ms)
            keep_min(f.stall_at_bytes, met_bytes + static_cast<uint64_t>(t.bytes.value_or(0)));
          if (t.after_ms) keep_min(f.stall_at, a.met + std::chrono::milliseconds(*t.after_ms));
          break;
        case ToxicType::kReset:
          if (t.bytes) keep_min(f.reset_at_bytes, met_bytes + static_cast<uint64_t>(*t.bytes));
          break;
        case ToxicType::kBlackhole:
          f.blackhole = true;
          break;
        case ToxicType::kSlowClose:
          f.slow_close = std::max(f.slow_close.value_or(std::chrono::milliseconds(0)),
                                  std::chrono::milliseconds(t.delay_ms));
          break;
        case ToxicType::kDown:
          break;
      }
    }
    pipe->set_faults(f);
  }
}

bool Connection::begin_close() {
  if (closed_) return false;
  closed_ = true;
  up_.close();
  down_.close();
  connect_timer_.cancel();
  reset_timer_.cancel();
  return true;
}

void Connection::reset() {
  if (!begin_close()) return;
  abort_socket(client_);
  abort_socket(upstream_);
}

void Connection::close_gracefully() {
  if (!begin_close()) return;
  error_code ec;
  client_.close(ec);
  upstream_.close(ec);
}

void Connection::pipe_failed(Pipe&, const char*, error_code) {
  reset();
}

void Connection::pipe_reset_point() {
  ++state_->stats.reset_by_toxic;
  reset();
}

void Connection::pipe_finished() {
  if (up_.finished() && down_.finished()) close_gracefully();
}

void Connection::pipe_read(unsigned direction, size_t n, bool discarded) {
  if (discarded)
    (direction == kUp ? state_->stats.discarded_up : state_->stats.discarded_down) += n;
}

void Connection::pipe_forwarded(unsigned direction, size_t n) {
  (direction == kUp ? state_->stats.bytes_up : state_->stats.bytes_down) += n;
}

}  // namespace sy::faultproxy
