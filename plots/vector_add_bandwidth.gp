# Lab 02: GB/s of each GPU vector add against n, with the device-to-device copy
# bandwidth measured in the same run. Small n fit in L2 (above the copy line);
# large n are limited by DRAM.
# make_plots.py sets: dir (s1.csv .. sN.csv: n,GB/s), nseries, copy_gbps; see style.gp.
load 'style.gp'
set title sprintf("Vector add (lab 02): bandwidth vs size, %s", gpu)
set xlabel 'elements n'
set ylabel 'GB/s  (12 n bytes / median time)'
set logscale x 2
set format x '2^%L'
set yrange [0:*]
set key bottom right
plot for [i=1:nseries] sprintf('%s/s%d.csv', dir, i) using 1:2 with linespoints title columnheader(2), \
     copy_gbps @ceiling_style title sprintf('device-to-device copy, measured: %.0f GB/s', copy_gbps)
