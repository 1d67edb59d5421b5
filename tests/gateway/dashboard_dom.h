// Reading the dashboard's DOM as headless Chromium dumps it (elements by attribute,
// texts, table cells, the SVG charts' polylines) and checking its screenshots: shared by
// the dashboard's page and gateway tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "chromium.h"

// Fails the test (it does not skip) when Chromium is missing: setup installs it.
#define REQUIRE_CHROMIUM() ASSERT_FALSE(::sy::testing::chromium_path().empty()) << ::sy::testing::kChromiumMissing

namespace sy::testing {

namespace dashboard_fs = std::filesystem;

// ---- reading the dumped DOM ----------------------------------------------------------

// The start tag of the first element carrying `attribute` (e.g. `id="mode"`); empty
// when there is none.
inline std::string start_tag(const std::string& dom, const std::string& attribute) {
  const size_t at = dom.find(" " + attribute);
  if (at == std::string::npos) return {};
  const size_t open = dom.rfind('<', at), close = dom.find('>', at);
  return open == std::string::npos || close == std::string::npos
             ? std::string()
             : dom.substr(open, close - open + 1);
}

// The text right after the start tag of the element with this id (up to the next tag).
inline std::string text_of(const std::string& dom, const std::string& id) {
  const size_t at = dom.find(" id=\"" + id + "\"");
  if (at == std::string::npos) return "<no element #" + id + ">";
  const size_t begin = dom.find('>', at) + 1;
  return dom.substr(begin, dom.find('<', begin) - begin);
}

inline std::string counter_text(const std::string& dom, const std::string& key) {
  const size_t at = dom.find("data-counter=\"" + key + "\"");
  if (at == std::string::npos) return "<no counter " + key + ">";
  const size_t begin = dom.find('>', at) + 1;
  return dom.substr(begin, dom.find('<', begin) - begin);
}

inline bool is_hidden(const std::string& tag) {
  return std::regex_search(tag, std::regex(R"(\shidden(=""|\s|>))"));
}

inline bool is_duration(const std::string& s) {
  return std::regex_match(s, std::regex(R"(\d+(\.\d+)? (µs|ms|s))"));
}
inline bool is_number(const std::string& s) {
  return std::regex_match(s, std::regex(R"(\d[\d,]*(\.\d+)?)"));
}

inline int count_of(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The text of the cell `data-field="field"` in the row with `row_attribute`, tags
// stripped.
inline std::string cell_text(const std::string& dom, const std::string& row_attribute, const std::string& field) {
  const size_t row = dom.find(row_attribute);
  if (row == std::string::npos) return "<no row " + row_attribute + ">";
  const size_t at = dom.find("data-field=\"" + field + "\"", row);
  if (at == std::string::npos) return "<no cell " + field + ">";
  const size_t begin = dom.find('>', at) + 1;
  const size_t end = std::min(dom.find("</td>", begin), dom.find("</th>", begin));
  std::string out;
  bool in_tag = false;
  for (size_t i = begin; i < end && i < dom.size(); ++i) {
    if (dom[i] == '<') in_tag = true;
    else if (dom[i] == '>') in_tag = false;
    else if (!in_tag) out += dom[i];
  }
  return out;
}

// The markup of the chart figure `id` (from its start tag to </figure>).
inline std::string chart_of(const std::string& dom, const std::string& id) {
  const size_t at = dom.find("id=\"chart-" + id + "\"");
  if (at == std::string::npos) return {};
  return dom.substr(at, dom.find("</figure>", at) - at);
}

// The polylines of a chart: each's data-series and its points as (x, y).
struct Polyline {
  std::string series;
  std::vector<std::pair<double, double>> points;
};
inline std::vector<Polyline> polylines(const std::string& chart) {
  std::vector<Polyline> out;
  const std::regex tag(R"re(<polyline ([^>]*)>)re"), points(R"re(points="([^"]*)")re"), series(R"re(data-series="([^"]*)")re");
  for (auto it = std::sregex_iterator(chart.begin(), chart.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[1];
    Polyline p;
    std::smatch m;
    if (std::regex_search(attrs, m, series)) p.series = m[1];
    if (std::regex_search(attrs, m, points)) {
      std::istringstream in(m[1].str());
      std::string pair;
      while (in >> pair) {
        const size_t comma = pair.find(',');
        if (comma != std::string::npos) p.points.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Every chart drew lines inside its 600×100 box, and `tok-s` one that moves.
inline void expect_charts_drawn(const std::string& dom, size_t min_points) {
  for (const char* id : {"tok-s", "ttft", "itl", "queues", "hit-rate", "power"}) {
    const std::string chart = chart_of(dom, id);
    ASSERT_FALSE(chart.empty()) << "no chart " << id;
    const auto lines = polylines(chart);
    ASSERT_FALSE(lines.empty()) << "chart " << id << " drew no line:\n" << chart.substr(0, 600);
    for (const Polyline& l : lines) {
      EXPECT_FALSE(l.series.empty()) << id;
      EXPECT_GE(l.points.size(), 2u) << id << " " << l.series;
      for (const auto& [x, y] : l.points) {
        EXPECT_GE(x, 0) << id;
        EXPECT_LE(x, 600) << id;
        EXPECT_GE(y, 0) << id;
        EXPECT_LE(y, 100) << id;
      }
    }
    size_t most = 0;
    for (const Polyline& l : lines) most = std::max(most, l.points.size());
    EXPECT_GE(most, min_points) << id;
  }
}

inline std::string dump_dom(const std::string& url) {
  const ChromiumRun run = chromium_dump_dom(url);
  EXPECT_FALSE(run.timed_out) << "chromium did not finish loading " << url;
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("</html>"), std::string::npos) << "no DOM from chromium:\n" << run.err;
  return run.out;
}

// A screenshot of `url` at width×height into `path`, checked to be a real PNG of that
// size with content (a blank page compresses to a few kilobytes).
inline void check_screenshot(const std::string& url, const std::string& path, uint32_t width = 1280, uint32_t height = 900) {
  std::error_code ec;
  dashboard_fs::remove(path, ec);
  const ChromiumRun run = chromium_screenshot(url, path, 5000, std::to_string(width) + "," + std::to_string(height));
  ASSERT_FALSE(run.timed_out) << "chromium did not finish the screenshot of " << url;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string png = read_text_file(path);
  ASSERT_GE(png.size(), 24u) << "no screenshot at " << path << ":\n" << run.err;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << path << " is not a PNG";
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(16), width) << "width";
  EXPECT_EQ(be32(20), height) << "height";
  EXPECT_GT(png.size(), 30u * 1024) << path << " is too small to show the dashboard";
  std::printf("dashboard screenshot: %s (%zu bytes)\n", path.c_str(), png.size());
}

}  // namespace sy::testing
