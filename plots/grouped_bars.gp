# Clustered bars, one cluster per group (a size, an input, a format), one bar
# per series (a variant) in each, against one reference line (the measured
# ceiling, or the library = 1x). Shared by the wave-2 lab plots: 21 transpose,
# 22 stencil, 23 unified memory, 24 histogram, 27 Monte Carlo, 29 LLM decode;
# what each shows is written in make_plots.py beside its data function.
# make_plots.py sets: dir (table.csv: group,series1,...; 'NaN': no bar),
# ngroups, nseries, plot_title, y_label (the group labels name the x axis), ymin,
# ymax, logy (1: log scale), ref (0: no line), ref_title, library (the 1-based series drawn in the
# library colour; 0: none), valuefmt (sprintf format of the value over each
# bar; '' none); see style.gp.
if (!exists('height')) { height = 640 }
load 'style.gp'
set title plot_title
set ylabel y_label
if (logy) { set logscale y 10 }
set yrange [ymin:ymax]
set xrange [-0.6:ngroups - 0.4]
set style data histograms
set style histogram cluster gap 1
set boxwidth 0.9
set xtics nomirror
set key below Left reverse maxcols 2
# Bar j of n in cluster x: gnuplot puts it (j - (n-1)/2) / (n + gap) from the centre.
bar_x(x, j) = x + (j - (nseries - 1) / 2.0) / (nseries + 1.0)
bar_color(j) = j == library ? library_color : word(series_colors, j - (library > 0 && j > library ? 1 : 0))
# The reference line before the numbers, which sit on white boxes: it never crosses one.
set style textbox opaque noborder margins 0.5,0.5
plot for [i=2:nseries + 1] dir.'/table.csv' using i:xtic(1) lc rgb bar_color(i - 1) title columnheader(i), \
     (ref > 0 ? ref : NaN) @ceiling_style title ref_title, \
     for [i=2:nseries + 1] dir.'/table.csv' skip 1 using (bar_x($0, i - 2)):(column(i)):(valuefmt eq '' ? '' : sprintf(valuefmt, column(i))) \
         with labels rotate by 90 left offset 0,0.4 font ',8' boxed notitle
