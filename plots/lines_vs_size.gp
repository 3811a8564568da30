# One line per series (a variant) against the problem size on a log2 axis,
# with one reference line (the measured ceiling, or the library = 1x). Shared
# by lab 25 (scan GB/s vs n, CUB's line among them), lab 26 (x CUB vs n) and
# lab 32 (all-reduce bus bandwidth vs buffer size, NCCL's among them).
# make_plots.py sets: dir (s1.csv .. sN.csv: size,value, header 'x,TITLE'),
# nseries, plot_title, x_label, y_label, ymin, ymax (0: autoscale), ref (0: no line),
# ref_title, library (the series drawn in the library colour, dashed; 0: none),
# keypos ('top left', ...); see style.gp.
if (!exists('height')) { height = 620 }
load 'style.gp'
set title plot_title
set xlabel x_label
set ylabel y_label
set logscale x 2
set format x '2^%L'
set autoscale xfix
set offsets graph 0.04, graph 0.04, 0, 0
if (ymax > 0) { set yrange [ymin:ymax] } else { set yrange [ymin:*] }
set key @keypos
# The library's line is linetype 2 (orange) and dashed; the others take the
# remaining linetypes in order.
kth(i) = i - (library > 0 && i > library ? 1 : 0)
line_type(i) = i == library ? 2 : (kth(i) == 1 ? 1 : kth(i) + 1)
dash_type(i) = i == library ? 2 : 1
plot for [i=1:nseries] sprintf('%s/s%d.csv', dir, i) using 1:2 with linespoints \
         lt line_type(i) dt dash_type(i) title columnheader(2), \
     (ref > 0 ? ref : NaN) @ceiling_style title ref_title
