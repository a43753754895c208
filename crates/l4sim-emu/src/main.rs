//! `l4sim-router CONFIG.json`: the emulator's router as a stand-alone binary (the same code
//! runs inside the Python extension as `python -m l4sim.emulate.router`); see `l4sim_emu::run`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    l4sim_emu::run::main(&args);
}
