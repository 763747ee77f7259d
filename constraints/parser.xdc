# RX parser (hdl/parser.py, top module "parser" from `metaroce verilog parser --width W -o DIR`).
# Target: 250 MHz (MR-HW brief: 512 bits x 250 MHz = 128 Gb/s raw), AMD UltraScale+.
# The parser is meant to sit inside a larger design (MAC -> parser -> engine), so only the clock is
# constrained here; its AXI4-Stream ports connect to on-chip logic, not to package pins.
create_clock -period 4.000 -name clk [get_ports clk]
# Synchronous active-high reset, driven from a reset synchroniser in the same clock domain.
set_false_path -from [get_ports rst]
