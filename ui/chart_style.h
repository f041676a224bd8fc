// chart_style.h — QCustomPlot colours that follow the application palette (light or dark).
#pragma once

#include <QColor>

class QCustomPlot;
class QCPScatterStyle;
class QCPAxis;
class QCPRange;

namespace llmwb::ui {

// Background, axes, grid and legend from the widget's palette; call again on palette changes.
void style_plot(QCustomPlot* plot);

// Moves the legend out of the plot area into a row below it, entries side by side, so that
// it never hides data.
void put_legend_below(QCustomPlot* plot);

// The smallest 1, 2 or 5 x 10^k at or above `v` (at least 1): an axis whose upper end is
// rounded so changes only when the data cross such a step, and keeps its tick labels (and
// QCustomPlot's cached images of them) the same from frame to frame.
double nice_ceiling(double v);

// A filled disc of `diameter` pixels as a scatter style that stamps one antialiased image per
// point: QCPScatterStyle::ssDisc rasterizes an antialiased ellipse per point on every draw.
QCPScatterStyle disc_scatter(const QColor& color, int diameter);

// A time axis for data from `first` to `last` (seconds) that live charts can keep cached: the
// whole span while it is shorter than `window`, then the window sliding along, its ends moving
// in chunks (a tenth of the span in 1-2-5 steps, at least 1 s), so that it changes at most
// about once a second. The newest point is never more than a chunk from the right edge.
QCPRange stepped_time_range(double first, double last, double window);

// Sets `axis` to `range`; true if that changed it (a live chart then replots every layer).
bool set_axis_range(QCPAxis* axis, const QCPRange& range);

// Ticks at whole numbers only (1, 2, 3, ... or multiples), for counts such as tokens and
// blocks: QCustomPlot's default ticker labels a 0..2 range 0, 0.5, 1, 1.5, 2.
void use_integer_ticks(QCPAxis* axis);

// Series colours readable on light and dark backgrounds (Okabe-Ito, colour-blind safe).
QColor series_color(int index);

// A stable, distinct colour for an id (KV block owners): golden-ratio hue steps.
QColor id_color(qint64 id);

}  // namespace llmwb::ui
