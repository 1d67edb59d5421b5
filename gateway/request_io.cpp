#include "gateway/request_io.h"

#include <algorithm>
#include <chrono>

namespace sy::gateway {

namespace {

class ExchangeClient : public ClientSide {
 public:
  ExchangeClient(std::shared_ptr<http::Exchange> ex, const ResponseHeader& header, const Tokenizer& tokenizer, const OpenAiRequest& r)
      : ex_(ex), responder_(std::move(ex), header, tokenizer, r.stream, r.include_usage, r.sampling.logprobs >= 0) {}

  boost::asio::any_io_executor executor() const override { return ex_->executor(); }
  void on_cancel(std::function<void()> f) override { ex_->on_cancel(std::move(f)); }
  bool cancelled() const override { return ex_->cancelled(); }
  void add_header(std::string name, std::string value) override { ex_->add_header(std::move(name), std::move(value)); }
  void respond_json(int status, std::string body) override { ex_->respond_json(static_cast<http::Status>(status), std::move(body)); }
  void tokens(const std::vector<http::ResponderToken>& t) override { responder_.tokens(t); }
  void finish(std::string_view reason, std::string_view text, const Usage& usage) override { responder_.finish(reason, text, usage); }
  void fail(const ApiError& error) override { responder_.fail(error); }
  bool begun() const override { return responder_.begun(); }

 private:
  std::shared_ptr<http::Exchange> ex_;
  http::OpenAiResponder responder_;
};

class SteadyAlarm : public Alarm {
 public:
  SteadyAlarm(boost::asio::any_io_executor ex, std::shared_ptr<const policy::Clock> clock) : timer_(std::move(ex)), clock_(std::move(clock)) {}

  void set(double due_s, std::function<void()> f) override {
    const uint64_t generation = ++generation_;
    const std::chrono::duration<double> in(std::clamp(due_s - clock_->now_s(), 0.0, 86400.0));
    timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(in));
    // The handler checks the generation: a cancel() racing the timer's expiry must win.
    timer_.async_wait([this, generation, f = std::move(f)](boost::system::error_code ec) {
      if (!ec && generation == generation_) f();
    });
  }
  void cancel() override {
    ++generation_;
    timer_.cancel();
  }

 private:
  boost::asio::steady_timer timer_;
  std::shared_ptr<const policy::Clock> clock_;
  uint64_t generation_ = 0;
};

}  // namespace

std::unique_ptr<ClientSide> exchange_client(std::shared_ptr<http::Exchange> exchange, const ResponseHeader& header,
                                            const Tokenizer& tokenizer, const OpenAiRequest& request) {
  return std::make_unique<ExchangeClient>(std::move(exchange), header, tokenizer, request);
}

WorkerConnect upstream_connect(boost::asio::any_io_executor ex) {
  return [ex](UpstreamRequest req, UpstreamHandlers h) -> std::shared_ptr<CancellableCall> {
    return UpstreamCall::start(ex, std::move(req), std::move(h));
  };
}

std::unique_ptr<Alarm> steady_alarm(boost::asio::any_io_executor ex, std::shared_ptr<const policy::Clock> clock) {
  return std::make_unique<SteadyAlarm>(std::move(ex), std::move(clock));
}

}  // namespace sy::gateway
