# Lab 12: GB/s of each softmax kernel at each size (one read and one write of
# the matrix / time) against the copy bandwidth. A missing bar: the variant does
# not run at that size.
# make_plots.py sets: dir (table.csv: size,variant1,...), nvariants, nsizes, copy_gbps,
# size_names, ymax; see style.gp.
load 'style.gp'
set title sprintf("Softmax (lab 12): bandwidth by size (%s), %s", size_names, gpu)
set ylabel 'GB/s  (8 x rows x cols bytes / median time)'
set xlabel size_names.'   (a missing bar: that variant does not run at that size)'
set yrange [0:ymax]
set xrange [-0.6:nsizes - 0.4]
set style data histograms
set style histogram cluster gap 1
set boxwidth 0.9
set key top left vertical Left reverse maxrows 3
plot for [i=2:nvariants + 1] dir.'/table.csv' using i:xtic(1) title columnheader(i), \
     copy_gbps @ceiling_style title sprintf('device-to-device copy, measured: %.0f GB/s', copy_gbps)
