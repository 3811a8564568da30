# Labs 30 and 33: each GEMM step as x the library measured in the same run, at
# the largest shape every step ran: the ladder of lab 18, with tensor cores.
# A step measured against another library configuration than the others (TF32)
# says which in its label.
# make_plots.py sets: dir (bars.csv: label,x library), nbars, ymax, plot_title,
# size_note, blas_note; see style.gp.
load 'style.gp'
set title sprintf("%s, %s, %s", plot_title, size_note, gpu)
set ylabel "x the library  (its time / the kernel's time)"
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
