# RX parser (hdl/parser.py, top module "parser" from `metaroce verilog parser --width W -o DIR`).
# Target (not a measured result): 250 MHz (512 bits x 250 MHz = 128 Gb/s raw), AMD UltraScale+.
# Measured so far (docs/hw/parser-results.md): 6 generic LUT levels at 512 bits (about 7 fit in
# 4 ns); 158.5 MHz at 64 bits on ECP5-85 speed 8 after place and route.
# The parser is meant to sit inside a larger design (MAC -> parser -> engine), so only the clock is
# constrained here; its AXI4-Stream ports connect to on-chip logic, not to package pins.
create_clock -period 4.000 -name clk [get_ports clk]
# Synchronous active-high reset, driven from a reset synchroniser in the same clock domain.
set_false_path -from [get_ports rst]
