#include "common/http/serve_loop.h"

#include <boost/asio/executor_work_guard.hpp>
#include <atomic>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

namespace sy::http {
namespace {

template <class Pred>
void wait_until(Pred done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

int serve_until_signal(boost::asio::io_context& ioc, HttpServer& server,
                       const ServeLoopOptions& options, const std::function<void()>& on_stop) {
  namespace net = boost::asio;
  std::promise<int> stop_signal;
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (!ec) stop_signal.set_value(sig);
  });
  auto guard = net::make_work_guard(ioc);
  std::atomic<int> running{options.threads};
  std::vector<std::thread> threads;
  for (int i = 0; i < options.threads; ++i)
    threads.emplace_back([&] {
      ioc.run();
      --running;
    });

  const std::string& host = server.options().host;
  const bool v6 = host.find(':') != std::string::npos;
  std::printf("%s listening on http://%s%s%s:%u\n", options.program.c_str(), v6 ? "[" : "",
              host.c_str(), v6 ? "]" : "", server.port());
  std::fflush(stdout);

  const int sig = stop_signal.get_future().get();
  std::fprintf(stderr, "signal %d: shutting down\n", sig);
  server.stop();
  if (on_stop) on_stop();
  wait_until([&] { return server.connections() == 0; }, options.drain);
  server.close_all();
  signals.cancel();
  guard.reset();
  wait_until([&] { return running.load() == 0; }, std::chrono::seconds(2));
  ioc.stop();
  for (auto& t : threads) t.join();
  return sig;
}

}  // namespace sy::http
