# Lab 28 (and any lab swept over threads per block x blocks per SM): the
# throughput of every launch shape of one variant at one size, one cell per
# point, its value written in it. Blank cells: points that could not launch or
# did not pass. Row "max": as many blocks per SM as are resident at once.
# tools/tune.py (or make_plots.py) sets: dir (heatmap.csv: xi,yi,value,block,
# blocks_per_sm), nx, ny, xtics_list, ytics_list (gnuplot tic lists), what
# (the title), unit (GB/s or GFLOP/s); see style.gp and heatmap_panel.gp.
if (!exists('height')) { height = 620 }
load 'style.gp'
data = dir.'/heatmap.csv'
panel_title = sprintf("%s\n%s", what, gpu)
x_label = 'threads per block'
y_label = 'blocks per SM  (grid = this x SMs)'
load 'heatmap_panel.gp'
