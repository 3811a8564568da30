# Lab 03: left, the GB/s of each copy direction from pageable and from pinned
# host memory, against the PCIe link rate; right, where the time of the whole
# vector add goes: the kernel alone vs the round trip.
# make_plots.py sets: dir (copies.csv: direction,pageable,pinned; times.csv: label,ms),
# link_gbps (0 when unknown), n (text), ymax (room above the bars for the key); see style.gp.
load 'style.gp'
set multiplot layout 1,2 title sprintf("PCIe (lab 03), n = %s floats per vector, %s", n, gpu)

set title 'copy bandwidth'
set style data histograms
set style histogram cluster gap 1
set boxwidth 0.9
set ylabel 'GB/s per direction'
set yrange [0:ymax]
set xrange [-0.6:1.6]
set key top center horizontal
if (link_gbps > 0) {
    plot dir.'/copies.csv' using 2:xtic(1) title 'pageable' lc rgb library_color, \
         '' using 3 title 'pinned' lc rgb student_color, \
         link_gbps @ceiling_style title sprintf('PCIe link: %.1f GB/s', link_gbps)
} else {
    plot dir.'/copies.csv' using 2:xtic(1) title 'pageable' lc rgb library_color, \
         '' using 3 title 'pinned' lc rgb student_color
}

set title 'time of c = a + b'
unset key
set style data boxes
set boxwidth 0.6
set xrange [*:*]
set logscale y 10
set yrange [*:*]
set ylabel 'median ms (log scale)'
set xtics rotate by -15 font ',10'
set rmargin 8
plot dir.'/times.csv' using 0:2:xtic(1) lc rgb student_color notitle, \
     '' using 0:2:(sprintf('%.3g', $2)) with labels offset 0,0.8 notitle
unset multiplot
