# Lab 08: the timeline of one run of pinned_streams. Each chunk's H2D copy
# (a and b), kernel and D2H copy (c) as a bar from the event before it to the
# event after it. Top: one row per stream, coloured by operation; a stream runs
# its operations in order, so its bars never overlap. Bottom: one row per
# operation (the H2D copy engine, the SMs, the D2H copy engine), one thin lane
# per stream; where an H2D bar and a D2H bar share a moment of time, both copy
# engines were busy at once.
#
# A bar starts when its stream reached it (the previous operation on that
# stream had finished), which can be before its engine was free: two H2D bars
# of different streams that overlap in time shared the one H2D link (or one
# waited for the other). nsys shows the engines' own start times.
#
#   gnuplot -e "datafile='results/h100/08_streams_timeline.csv'; outfile='build/plots/streams_timeline.png'" \
#           plots/streams_timeline.gp
#
# datafile  CSV from `08_streams --timeline FILE`: a header line, then
#           n,stream,chunk,op,start_ms,end_ms with op one of h2d, kernel, d2h
# outfile   .png (pngcairo, or png where cairo is missing) or .svg
# nsel      which n to draw when the file holds several sizes (default: the smallest)

if (!exists("datafile")) datafile = 'results/h100/08_streams_timeline.csv'
if (!exists("outfile")) outfile = 'streams_timeline.png'

set datafile separator comma

# ---- what the file holds ------------------------------------------------------
stats datafile using 1 every ::1 nooutput
if (!exists("nsel")) nsel = STATS_min
stats datafile using ($1 == nsel ? $2 : NaN) every ::1 nooutput
nstreams = int(STATS_max) + 1
stats datafile using ($1 == nsel ? $3 : NaN) every ::1 nooutput
nchunks = int(STATS_max) + 1
stats datafile using ($1 == nsel ? $6 : NaN) every ::1 nooutput
span_ms = STATS_max

is_op(name) = ($1 == nsel && strcol(4) eq name)
center(name) = is_op(name) ? ($5 + $6) / 2 : NaN

# ---- output -------------------------------------------------------------------
is_svg = strlen(outfile) > 4 && outfile[strlen(outfile) - 3:] eq ".svg"
if (is_svg) {
  set terminal svg size 1100,720 dynamic noenhanced font "Sans,11" background rgb "white"
} else {
  if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1100,720 noenhanced font "Sans,10"
  } else {
    set terminal png size 1100,720 noenhanced
  }
}
set output outfile

# The colour-blind-safe set of style.gp (this script runs without style.gp:
# make_plots.py passes it only datafile and outfile).
h2d_color = "#0072b2"
kernel_color = "#d55e00"
d2h_color = "#009e73"
# Stream colours for the lower panel, cycling after 8.
array stream_colors[8] = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#999933"]
stream_color(s) = stream_colors[int(s) % 8 + 1]
rgb(hex) = int("0x" . hex[2:7])

set multiplot layout 2,1 title sprintf("lab 08 pinned_streams: one run of n = %d, %d stream%s x %d chunk%s, %.3f ms", \
    nsel, nstreams, nstreams == 1 ? "" : "s", nchunks, nchunks == 1 ? "" : "s", span_ms)

# Fixed margins so the two panels share one time axis.
set lmargin at screen 0.09
set rmargin at screen 0.84
set xrange [0:span_ms * 1.02]
set grid xtics lc rgb "#dddddd"
set style fill solid 0.85 border lc rgb "#333333"
set key outside right top vertical

# ---- by stream ------------------------------------------------------------------
set ylabel "stream"
set yrange [nstreams - 0.5:-0.5]
set ytics 1
set xlabel ""
bar = 0.35
label_chunks = nchunks <= 16
plot datafile every ::1 using (center("h2d")):2:5:6:($2 - bar):($2 + bar) with boxxyerror lc rgb h2d_color title "H2D a, b", \
     '' every ::1 using (center("kernel")):2:5:6:($2 - bar):($2 + bar) with boxxyerror lc rgb kernel_color title "kernel", \
     '' every ::1 using (center("d2h")):2:5:6:($2 - bar):($2 + bar) with boxxyerror lc rgb d2h_color title "D2H c", \
     '' every ::1 using (label_chunks ? center("h2d") : NaN):2:(sprintf("%d", $3)) with labels tc rgb "white" notitle, \
     '' every ::1 using (label_chunks ? center("d2h") : NaN):2:(sprintf("%d", $3)) with labels tc rgb "white" notitle

# ---- by engine ------------------------------------------------------------------
# Row 0 H2D, 1 kernels, 2 D2H; stream s gets lane s of nstreams inside its row.
lane = 0.8 / nstreams
lane_y(row) = row - 0.4 + lane * ($2 + 0.5)
set ylabel "engine"
set yrange [2.6:-0.6]
set ytics ("H2D copy" 0, "SMs" 1, "D2H copy" 2)
set xlabel "ms since the first event"
plot datafile every ::1 using (center("h2d")):(lane_y(0)):5:6:(lane_y(0) - lane * 0.45):(lane_y(0) + lane * 0.45):(rgb(stream_color($2))) \
         with boxxyerror lc rgb variable notitle, \
     '' every ::1 using (center("kernel")):(lane_y(1)):5:6:(lane_y(1) - lane * 0.45):(lane_y(1) + lane * 0.45):(rgb(stream_color($2))) \
         with boxxyerror lc rgb variable notitle, \
     '' every ::1 using (center("d2h")):(lane_y(2)):5:6:(lane_y(2) - lane * 0.45):(lane_y(2) + lane * 0.45):(rgb(stream_color($2))) \
         with boxxyerror lc rgb variable notitle, \
     for [s = 0:nstreams - 1] NaN with boxes lc rgb stream_color(s) title sprintf("stream %d", s)

unset multiplot
