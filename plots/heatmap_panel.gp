# One heat map panel, loaded by tuning_heatmap.gp and peer_matrix.gp after
# style.gp: a cell per (xi, yi), coloured by its value and with the value
# written in it (white on dark cells). Cells absent from the file stay blank.
# Before loading, set: data (the CSV: xi,yi,value,...), nx, ny, xtics_list,
# ytics_list (gnuplot tic lists: '"64" 0, "128" 1'), x_label, y_label, unit (the
# colour bar's label), panel_title.
set autoscale xy  # a panel before this one set the ranges: stats would see its values out of them
stats data using 3 nooutput
middle = STATS_max / 2  # the colours run from 0 (cbrange): above half of the top, a cell is dark
set title panel_title
set xlabel x_label
set ylabel y_label
set cblabel unit
set xrange [-0.5:nx - 0.5]
set yrange [-0.5:ny - 0.5]
set xtics (@xtics_list)
set ytics (@ytics_list)
unset grid
set border 15
set tics out
set cbrange [0:*]
set palette defined (0 '#f7fbff', 0.5 '#6baed6', 1 '#08306b')
set style fill solid 1.0 noborder
set key off
plot data using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     '' using 1:2:(sprintf('%.0f', $3)):($3 > middle ? 0xffffff : 0x000000) with labels tc rgb variable
