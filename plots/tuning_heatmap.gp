# Lab 28 (and any lab swept over threads per block x blocks per SM): the
# throughput of every launch shape of one variant at one size, one cell per
# point, its value written in it. Blank cells: points that could not launch or
# did not pass. Row "max": as many blocks per SM as are resident at once.
# tools/tune.py (or make_plots.py) sets: dir (heatmap.csv: xi,yi,value,block,
# blocks_per_sm), nx, ny, xtics_list, ytics_list (gnuplot tic lists), what
# (the title), unit (GB/s or GFLOP/s); see style.gp.
if (!exists('height')) { height = 620 }
load 'style.gp'
data = dir.'/heatmap.csv'
stats data using 3 nooutput
middle = (STATS_min + STATS_max) / 2
set title sprintf("%s\n%s", what, gpu)
set xlabel 'threads per block'
set ylabel 'blocks per SM  (grid = this x SMs)'
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
