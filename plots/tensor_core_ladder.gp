# Lab 30: each tensor-core GEMM step as x cuBLAS measured in the same run, at
# the largest shape every step ran: the ladder of lab 18, with tensor cores.
# A step measured against another cuBLAS configuration than the others (TF32)
# says which in its label.
# make_plots.py sets: dir (bars.csv: label,x cuBLAS), nbars, ymax, size_note,
# blas_note; see style.gp.
load 'style.gp'
set title sprintf("Tensor-core GEMM ladder (lab 30): speed vs cuBLAS in the same run, %s, %s", size_note, gpu)
set ylabel 'x cuBLAS  (time of cuBLAS / time of the kernel)'
set yrange [0:ymax]
set xrange [-0.6:nbars - 0.4]
set style data boxes
set boxwidth 0.7
set xtics rotate by 20 right
set bmargin 6
set key top left
plot dir.'/bars.csv' using 0:2:xtic(1) lc rgb student_color notitle, \
     '' using 0:2:(sprintf('%.2fx', $2)) with labels offset 0,0.8 notitle, \
     1 @ceiling_style title blas_note
