#include "common/http/kv_event_stream.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/protocol/internal_api.h"

namespace sy::http {
namespace {
constexpr std::chrono::seconds kPingInterval{15};
}  // namespace

// One subscriber of the hub: drains it on the connection's strand whenever something is
// published, and pings while nothing happens.
class KvEventStreams::Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(KvEventHub& hub, std::shared_ptr<Exchange> ex)
      : hub_(hub), ex_(std::move(ex)), ping_(ex_->executor()) {}

  void start() {
    std::weak_ptr<Stream> weak = weak_from_this();
    auto exec = ex_->executor();
    // notify runs on the publishing thread: it only schedules a drain.
    sub_ = hub_.subscribe([weak, exec] {
      boost::asio::post(exec, [weak] {
        if (auto self = weak.lock()) self->drain();
      });
    });
    ex_->on_cancel([self = shared_from_this()] { self->stop(); });
    drain();  // the snapshot
    arm_ping();
  }

  void close() {
    boost::asio::post(ex_->executor(), [self = shared_from_this()] {
      self->ex_->finish();
      self->stop();
    });
  }

 private:
  void drain() {
    if (!sub_) return;
    std::string out;
    for (const KvEvent& e : sub_->drain())
      out += kv_event_data(KvEventWire{e.seq, e.type == KvEvent::Type::kStored, e.hashes});
    if (!out.empty() && !ex_->write(std::move(out))) return stop();
    if (sub_->overflowed()) {
      // Too far behind to catch up: the client reconnects and starts from a snapshot.
      ex_->write(sse_error(ApiError::unavailable(
          "kv event subscriber fell too far behind; reconnect", "kv_events_overflow")));
      ex_->finish();
      stop();
    }
  }

  void arm_ping() {
    ping_.expires_after(kPingInterval);
    ping_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || !self->sub_) return;
      if (!self->ex_->write(": ping\n\n")) return self->stop();
      self->arm_ping();
    });
  }

  void stop() {
    sub_.reset();  // unsubscribes
    ping_.cancel();
  }

  KvEventHub& hub_;
  std::shared_ptr<Exchange> ex_;
  boost::asio::steady_timer ping_;
  std::shared_ptr<KvSubscription> sub_;
};

void KvEventStreams::serve(std::shared_ptr<Exchange> ex) {
  auto stream = std::make_shared<Stream>(hub_, ex);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_)
      return ex->respond_error(ApiError::unavailable("the worker is shutting down", "shutting_down"));
    std::erase_if(streams_, [](const std::weak_ptr<Stream>& w) { return w.expired(); });
    streams_.push_back(stream);
  }
  ex->start_stream();
  stream->start();
}

void KvEventStreams::close_all() {
  std::vector<std::weak_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    streams.swap(streams_);
  }
  for (auto& w : streams)
    if (auto s = w.lock()) s->close();
}

}  // namespace sy::http
