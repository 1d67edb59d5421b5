// switchyard-faultproxy --upstream HOST:PORT [--listen HOST:PORT] [--control HOST:PORT]
//     [--toxic JSON]... [--seed N] [--max-queue-bytes N] [--connect-timeout-ms N]
// Prints one line once both ports are bound:
//   switchyard-faultproxy listening on HOST:PORT control on HOST:PORT upstream HOST:PORT
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench/faultproxy/control_api.h"
#include "bench/faultproxy/fault_proxy.h"
#include "common/cli/args.h"
#include "common/config/fleet_config.h"

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace sy::faultproxy;

constexpr const char* kUsage =
    "usage: switchyard-faultproxy --upstream HOST:PORT [--listen HOST:PORT (127.0.0.1:0)]\n"
    "         [--control HOST:PORT (127.0.0.1:0)] [--toxic JSON]... [--seed N]\n"
    "         [--max-queue-bytes N (1048576)] [--connect-timeout-ms N (5000)]\n"
    "Toxic JSON and the control API: bench/README.md.";

tcp::endpoint resolve(net::io_context& ioc, const std::string& flag, const std::string& address) {
  std::string host;
  uint16_t port = 0;
  try {
    std::tie(host, port) = sy::split_host_port(address);
  } catch (const std::runtime_error& e) {
    throw sy::cli::UsageError("--" + flag + ": " + e.what());
  }
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty())
    throw sy::cli::UsageError("--" + flag + ": cannot resolve '" + host + "': " + ec.message());
  return results.begin()->endpoint();
}

std::string address(const tcp::endpoint& e, uint16_t port) {
  const std::string host = e.address().to_string();
  return (e.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

int run(const std::vector<std::string>& argv) {
  // --toxic repeats, which the flag parser does not allow: take those out first.
  std::vector<std::string> rest, toxic_texts;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--toxic") {
      if (i + 1 >= argv.size()) throw sy::cli::UsageError("--toxic needs a value");
      toxic_texts.push_back(argv[++i]);
    } else if (argv[i].rfind("--toxic=", 0) == 0) {
      toxic_texts.push_back(argv[i].substr(8));
    } else {
      rest.push_back(argv[i]);
    }
  }
  const sy::cli::Args a(
      rest, {"listen", "upstream", "control", "seed", "max-queue-bytes", "connect-timeout-ms"}, {});
  std::vector<Toxic> toxics;
  for (const std::string& text : toxic_texts) {
    sy::Json j;
    Toxic t;
    auto e = sy::parse_json_object(text, j);
    if (!e) e = parse_toxic(j, t);
    if (e) throw sy::cli::UsageError("--toxic '" + text + "': " + e->message);
    toxics.push_back(t);
  }

  net::io_context ioc(1);
  ProxyOptions options;
  options.upstream = resolve(ioc, "upstream", a.get("upstream"));
  options.max_queue_bytes = static_cast<size_t>(a.get_int("max-queue-bytes", 1 << 20));
  if (options.max_queue_bytes < 1) throw sy::cli::UsageError("--max-queue-bytes must be >= 1");
  options.connect_timeout = std::chrono::milliseconds(a.get_int("connect-timeout-ms", 5000));
  if (options.connect_timeout.count() < 1)
    throw sy::cli::UsageError("--connect-timeout-ms must be >= 1");
  options.seed =
      a.has("seed") ? static_cast<uint64_t>(a.get_int("seed", 0)) : std::random_device{}();
  const tcp::endpoint listen_at = resolve(ioc, "listen", a.get_or("listen", "127.0.0.1:0"));
  const tcp::endpoint control_at = resolve(ioc, "control", a.get_or("control", "127.0.0.1:0"));
  const tcp::endpoint upstream = options.upstream;

  FaultProxy proxy(ioc, std::move(options));
  for (const Toxic& t : toxics) proxy.add_toxic(t);
  ControlServer control(ioc,
                        [&proxy](const ControlRequest& req) { return handle_control(proxy, req); });
  if (std::string err = proxy.listen(listen_at); !err.empty()) {
    std::fprintf(stderr, "error: cannot listen on %s: %s\n",
                 address(listen_at, listen_at.port()).c_str(), err.c_str());
    return 1;
  }
  if (std::string err = control.listen(control_at); !err.empty()) {
    std::fprintf(stderr, "error: cannot listen on %s: %s\n",
                 address(control_at, control_at.port()).c_str(), err.c_str());
    return 1;
  }
  std::printf("switchyard-faultproxy listening on %s control on %s upstream %s\n",
              address(listen_at, proxy.port()).c_str(), address(control_at, control.port()).c_str(),
              address(upstream, upstream.port()).c_str());
  std::fflush(stdout);

  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (ec) return;
    proxy.stop();
    control.stop();
    ioc.stop();
  });
  ioc.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::puts(kUsage);
    return 0;
  }
  try {
    return run(args);
  } catch (const sy::cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\n%s\n", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
