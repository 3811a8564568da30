# Labs 05, 09, 10, 11, 18: each matmul kernel as % of cuBLAS SGEMM measured in
# the same run, at its lab's largest size: the ladder of the matmul labs. A
# version that a later lab measures again is taken from the latest lab's run.
# make_plots.py sets: dir (bars.csv: label,% of cuBLAS), blas_gflops, ymax, size_note; see style.gp.
load 'style.gp'
set title sprintf("The matmul ladder: %% of cuBLAS SGEMM in the same run (%s), %s", size_note, gpu)
set ylabel '% of cuBLAS (time of cuBLAS / time of the kernel)'
set yrange [0:ymax]
set style data boxes
set boxwidth 0.7
set xtics rotate by -25
set key top left
plot dir.'/bars.csv' using 0:2:xtic(1) lc rgb student_color notitle, \
     '' using 0:2:(sprintf('%.0f%%', $2)) with labels offset 0,0.8 notitle, \
     100 @ceiling_style title sprintf('cuBLAS SGEMM: %.0f GFLOP/s at its best size', blas_gflops)
