// live_axis.h — QCustomPlot axes whose tick labels change from frame to frame (the attention
// heatmap's token labels) drawn on a LivePlot's live layer, without a full replot.
//
// Two things in QCustomPlot stand in the way. An axis renders each tick label's text into a
// pixmap and keeps only 16 of them (QCPAxisPainterPrivate::mLabelCache): an axis with ~100
// token labels renders every one again on every draw. And tick vectors and margins are set up
// only by a full replot's layout pass, so a live-layer draw alone would show stale labels, or
// labels wider than the margin laid out for them.
#pragma once

class QCPAxis;
class QCPAxisRect;

namespace llmwb::ui {

// Lets `axis` keep the pixmaps of up to `labels` distinct tick label texts (they are dropped
// when the font, colour or rotation change, as before).
void keep_tick_labels(QCPAxis* axis, int labels);

// Sets up the tick vectors (positions, label texts) of every axis of `rect` from their tickers
// and ranges, as a full replot does before drawing, and returns whether each visible axis
// still fits in the margin laid out for it. False: replot everything (the layout grows).
bool prepare_live_axes(QCPAxisRect* rect);

}  // namespace llmwb::ui
