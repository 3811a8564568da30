# Labs 04, 06, 07: the GB/s of every reduction version and of CUB, at the
# largest n, against the copy bandwidth (a sum reads each byte once).
# Each version is labelled with the lab that introduced it; all are measured in
# the run of the latest lab that has it, so they compare within one process.
# make_plots.py sets: dir (bars.csv: label,GB/s,1 student|2 library), copy_gbps, n (text),
# run_note (which run the bars come from), ymax; see style.gp.
load 'style.gp'
set title sprintf("Reductions (labs 04, 06, 07) vs CUB, n = %s floats, %s\n(%s)", n, gpu, run_note)
set ylabel 'GB/s  (4 n bytes / median time)'
set yrange [0:ymax]
set style data boxes
set boxwidth 0.7
set xtics rotate by -25
set key top left
plot dir.'/bars.csv' using 0:2:($3 == 2 ? library_rgb : student_rgb):xtic(1) lc rgb variable notitle, \
     '' using 0:2:(sprintf('%.0f', $2)) with labels offset 0,0.8 notitle, \
     NaN with boxes lc rgb student_color title 'kernels of the labs', \
     NaN with boxes lc rgb library_color title 'CUB (the library)', \
     copy_gbps @ceiling_style title sprintf('device-to-device copy, measured: %.0f GB/s', copy_gbps)
