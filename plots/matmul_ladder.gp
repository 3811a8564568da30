# Labs 05, 09, 10, 11, 18: each matmul kernel as % of cuBLAS SGEMM measured in
# the same run, every lab at the same size (the largest all of them ran: 4096³,
# their benchmark size): the ladder of the matmul labs. A version that a later
# lab measures again is taken from the latest lab's run.
# make_plots.py sets: dir (bars.csv: label,% of cuBLAS), nbars, ymax, size_note,
# blas_note; see style.gp.
load 'style.gp'
set title sprintf("The matmul ladder: %% of cuBLAS SGEMM (FP32) in the same run, %s, %s", size_note, gpu)
set ylabel '% of cuBLAS (time of cuBLAS / time of the kernel)'
set yrange [0:ymax]
set xrange [-0.6:nbars - 0.4]
set style data boxes
set boxwidth 0.7
set xtics rotate by 30 right
set bmargin 7
set rmargin 3
set key top left
plot dir.'/bars.csv' using 0:2:xtic(1) lc rgb student_color notitle, \
     '' using 0:2:(sprintf('%.0f%%', $2)) with labels offset 0,0.8 notitle, \
     100 @ceiling_style title blas_note
