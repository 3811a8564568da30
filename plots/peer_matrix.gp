# Lab 32: the GB/s of a copy between every pair of GPUs through the copy
# engines (cudaMemcpyPeerAsync), at the largest buffer measured. Left: one
# direction, row = the GPU copied from, column = the GPU copied to. Right: both
# directions of a pair at once, the two directions' GB/s summed (the same value
# in both of the pair's cells). The diagonal is blank: no copy to itself.
# make_plots.py sets: dir (one_way.csv, both_ways.csv: xi,yi,GB/s), nx (GPUs),
# xtics_list (the GPU ids as a tic list), size_note, gpu; see style.gp and
# heatmap_panel.gp.
width = 1100
height = 560
load 'style.gp'
set multiplot layout 1,2 title sprintf("GPU-to-GPU copies (lab 32), copy engines, %s, %s", size_note, gpu)
ny = nx
ytics_list = xtics_list
unit = ''  # in the panel titles: a colour bar label does not fit beside two panels
x_label = 'to GPU'
y_label = 'from GPU'
data = dir.'/one_way.csv'
panel_title = 'one direction at a time, GB/s'
load 'heatmap_panel.gp'
x_label = 'GPU b'
y_label = 'GPU a'
data = dir.'/both_ways.csv'
panel_title = 'both directions at once, GB/s (a to b + b to a)'
load 'heatmap_panel.gp'
unset multiplot
