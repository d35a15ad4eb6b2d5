# Draws the curves llmspool-bench --curves measured: one PNG per scenario, three panels
# each (wall, daemon CPU per request, daemon peak RSS) against the size, both axes as the
# CSV has them. Run in this folder: gnuplot curves.gp (Debian gnuplot-nox).
set datafile separator ","
set terminal pngcairo size 1500,460 font "sans,11"
set logscale x 10
set grid
set yrange [0:*]
set key off
set style data linespoints
set pointsize 1.4

do for [scenario in "streams backlog"] {
    file = scenario . ".csv"
    set output scenario . ".png"
    if (scenario eq "streams") {
        xlabel = "streams held at once (each 20 s, one token a second)"
    } else {
        xlabel = "requests waiting in outgoing when the daemon starts"
    }
    set multiplot layout 1,3 title "llmspool: " . scenario . " (labels: load average at the start of each point)"
    set xlabel xlabel
    set ylabel "wall s"
    plot file using 1:2 skip 1 lw 2 pt 7, \
         file using 1:2:(sprintf("load %.1f", $6)) skip 1 with labels offset 0,1 font "sans,9"
    set ylabel "daemon CPU ms per request"
    plot file using 1:3 skip 1 lw 2 pt 7
    set ylabel "daemon peak RSS MiB"
    plot file using 1:4 skip 1 lw 2 pt 7
    unset multiplot
}
