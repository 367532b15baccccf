//! Where the time of opening a wide file through SQL goes, phase by phase.
//!
//! ```text
//! cargo run --release --example open_phases -- FILE [ITERATIONS] [QUERY]
//! ```
//!
//! Repeats, ITERATIONS times (200 by default): make a session, register FILE
//! as `events`, plan QUERY (by default a `SELECT` of three NanoAOD columns)
//! into a logical plan, then into a physical plan; and prints the mean time
//! of each phase. Uses the allocator of the `rntuple` command.

use std::time::{Duration, Instant};

use rntuple::datafusion::{session_context, RNTupleReadOptions, SessionContextExt};

// The `rntuple` command's allocator.
#[path = "../src/bin/rntuple/allocator.rs"]
mod allocator;

const PHASES: [&str; 4] = [
    "session",
    "register",
    "sql -> logical",
    "logical -> physical",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    allocator::tune();
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: open_phases FILE [ITERATIONS] [QUERY]")?;
    let iterations: u32 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(200);
    let query = args
        .next()
        .unwrap_or_else(|| "SELECT nMuon, Muon_pt, MET_pt FROM events".to_string());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut spent = [Duration::ZERO; 4];
    for _ in 0..iterations {
        runtime.block_on(async {
            let t0 = Instant::now();
            let ctx = session_context();
            let t1 = Instant::now();
            ctx.register_rntuple("events", &path, RNTupleReadOptions::default())
                .await?;
            let t2 = Instant::now();
            let frame = ctx.sql(&query).await?;
            let t3 = Instant::now();
            let plan = frame.create_physical_plan().await?;
            let t4 = Instant::now();
            std::hint::black_box(plan);
            for (k, (a, b)) in [(t0, t1), (t1, t2), (t2, t3), (t3, t4)]
                .into_iter()
                .enumerate()
            {
                spent[k] += b - a;
            }
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    let mean = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(iterations.max(1));
    for (name, d) in PHASES.iter().zip(spent) {
        println!("{name:20} {:.3} ms", mean(d));
    }
    println!("{:20} {:.3} ms", "total", mean(spent.iter().sum()));
    Ok(())
}
