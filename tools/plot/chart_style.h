// The chart's sizes and fonts in figure units (pixels on PNG, points on SVG and PDF), shared by
// the layout and the drawing so that both agree on where text goes.
#pragma once
#include "dplab/tools/plot/text.h"

namespace dplab::plot::style {

inline constexpr double kPad = 10;        // figure edge to any content
inline constexpr double kTickLen = 5;     // tick marks, outside the plot area
inline constexpr double kTickGap = 3;     // tick mark to its label
inline constexpr double kLabelGap = 6;    // tick labels to the axis label
inline constexpr double kLegendGap = 14;  // plot area to the legend
inline constexpr double kSwatch = 30;     // a legend entry's line sample
inline constexpr double kMarkerSize = 3.6;
inline constexpr double kLineWidth = 1.8;
inline constexpr int kMaxMarkersPerSeries = 25;  // more points: markers on every n-th one

inline constexpr Font kTickFont{11};
inline constexpr Font kLabelFont{13};
inline constexpr Font kTitleFont{14.5, true};
inline constexpr Font kLegendFont{12};
inline constexpr Font kNoteFont{11, false, true};
inline constexpr Font kMarkerFont{10};

}  // namespace dplab::plot::style
