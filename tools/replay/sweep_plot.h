// The sweep plot: hit rate (y, 0-100 %) against cache capacity (x, tokens), one line per series
// (eviction policy), as a self-contained SVG written with plain string formatting.
// The x axis is logarithmic when the capacities span more than a factor of 20, linear otherwise.
#pragma once

#include <string>
#include <vector>

namespace radixkv::tools {

struct PlotPoint {
  double capacity_tokens = 0;
  double hit_rate = 0;  // 0..1
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;  // any order; drawn sorted by capacity
};

// `subtitle` is a second title line (the trace and page size, say).
std::string render_sweep_svg(const std::vector<PlotSeries>& series, const std::string& title,
                             const std::string& subtitle);

}  // namespace radixkv::tools
