#include "tools/replay/sweep_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace radixkv::tools {

namespace {

constexpr double kWidth = 760, kHeight = 480;
constexpr double kLeft = 80, kRight = 180, kTop = 70, kBottom = 60;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr std::array kColors = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string escape_xml(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// 1500000 -> "1.5M"
std::string short_count(double value) {
  const std::array<std::pair<double, const char*>, 4> units = {
      {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, suffix] : units) {
    if (value >= scale) return fmt::format("{:g}{}", value / scale, suffix);
  }
  return fmt::format("{:g}", value);
}

// Tick values for the x axis, and a mapping from capacity to [0, 1].
struct XAxis {
  bool log = false;
  double lo = 0, hi = 1;
  double position(double x) const {
    if (hi <= lo) return 0.5;
    return log ? (std::log10(x) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
               : (x - lo) / (hi - lo);
  }
  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi * 1.0001;
           decade *= 10) {
        for (double m : {1.0, 2.0, 5.0}) {
          const double v = decade * m;
          if (v >= lo * 0.9999 && v <= hi * 1.0001) out.push_back(v);
        }
      }
    } else {
      const double raw = (hi - lo) / 5;
      const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
      double step = magnitude;
      for (double m : {1.0, 2.0, 5.0, 10.0}) {
        if (magnitude * m >= raw) {
          step = magnitude * m;
          break;
        }
      }
      for (double v = std::ceil(lo / step) * step; v <= hi * 1.0001; v += step) out.push_back(v);
    }
    return out;
  }
};

// Log scale when the capacities span more than a factor of 20.
XAxis axis_for(const std::vector<PlotSeries>& series) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const PlotSeries& s : series) {
    for (const PlotPoint& p : s.points) {
      lo = any ? std::min(lo, p.capacity_tokens) : p.capacity_tokens;
      hi = any ? std::max(hi, p.capacity_tokens) : p.capacity_tokens;
      any = true;
    }
  }
  XAxis x;
  x.log = any && lo > 0 && hi / lo > 20;
  if (x.log) {
    x.lo = lo;
    x.hi = hi;
  } else {
    x.lo = 0;
    x.hi = any && hi > 0 ? hi * 1.05 : 1;
  }
  return x;
}

double x_pixel(const XAxis& x, double capacity) { return kLeft + kPlotW * x.position(capacity); }
double y_pixel(double rate) { return kTop + kPlotH * (1 - rate); }

// Titles, grid, ticks and axis labels.
std::string frame_svg(const XAxis& x, const std::string& title, const std::string& subtitle) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      kWidth, kHeight);
  svg += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"18\" text-anchor=\"middle\">{}</text>\n",
                     kWidth / 2, escape_xml(title));
  svg += fmt::format(
      "<text x=\"{}\" y=\"48\" font-size=\"12\" fill=\"#555\" text-anchor=\"middle\">{}</text>\n",
      kWidth / 2, escape_xml(subtitle));
  // Grid and y ticks every 10 %.
  for (int i = 0; i <= 10; ++i) {
    const double y = y_pixel(i / 10.0);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>\n",
        kLeft, y, kLeft + kPlotW, y);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}%</text>\n",
        kLeft - 6, y + 4, i * 10);
  }
  for (double tick : x.ticks()) {
    const double xx = x_pixel(x, tick);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e5e5e5\"/>\n",
        xx, kTop, kTop + kPlotH);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>\n",
        xx, kTop + kPlotH, kTop + kPlotH + 5);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", xx,
        kTop + kPlotH + 18, short_count(tick));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n",
      kLeft, kTop, kPlotW, kPlotH);
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">cache capacity (tokens{})"
      "</text>\n",
      kLeft + kPlotW / 2, kHeight - 16, x.log ? ", log scale" : "");
  svg += fmt::format(
      "<text transform=\"translate(22 {}) rotate(-90)\" font-size=\"13\" "
      "text-anchor=\"middle\">hit rate (% of input tokens)</text>\n",
      kTop + kPlotH / 2);
  return svg;
}

// One series: its line, its points with their values, its legend entry (the i-th).
std::string series_svg(const PlotSeries& series, std::size_t i, const XAxis& x) {
  const char* color = kColors[i % kColors.size()];
  std::vector<PlotPoint> points = series.points;
  std::sort(points.begin(), points.end(), [](const PlotPoint& a, const PlotPoint& b) {
    return a.capacity_tokens < b.capacity_tokens;
  });
  std::string path;
  for (const PlotPoint& p : points) {
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", x_pixel(x, p.capacity_tokens),
                        y_pixel(p.hit_rate));
  }
  std::string svg = fmt::format(
      "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, color);
  for (const PlotPoint& p : points) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {} tokens, "
        "{:.2f}%</title></circle>\n",
        x_pixel(x, p.capacity_tokens), y_pixel(p.hit_rate), color, escape_xml(series.name),
        p.capacity_tokens, 100 * p.hit_rate);
  }
  const double ly = kTop + 12 + 22.0 * static_cast<double>(i);
  svg += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
      "stroke-width=\"2\"/>\n",
      kLeft + kPlotW + 16, ly, kLeft + kPlotW + 40, color);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n",
                     kLeft + kPlotW + 46, ly + 4, escape_xml(series.name));
  return svg;
}

}  // namespace

std::string render_sweep_svg(const std::vector<PlotSeries>& series, const std::string& title,
                             const std::string& subtitle) {
  const XAxis x = axis_for(series);
  std::string svg = frame_svg(x, title, subtitle);
  for (std::size_t i = 0; i < series.size(); ++i) svg += series_svg(series[i], i, x);
  svg += "</svg>\n";
  return svg;
}

}  // namespace radixkv::tools
