//! `hetblas devices`: what discovery found, never failing for a backend that could not be
//! used: each absent backend is listed with why (its load error, the setting that left it
//! out). A setting whose value cannot be used is listed too, its default taken, and makes the
//! command exit with an error once everything is printed.

use clap::Args;
use hetblas::{Result, Survey};

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// Print the report as one JSON object (for scripts) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(survey: Survey, args: DevicesArgs) -> Result<()> {
    let Survey {
        settings,
        setting_errors,
        backends,
        profile_status,
        runtime,
        ..
    } = survey;
    let runtime = match runtime {
        Ok(rt) => Some(rt),
        // No device at all: the backends below say why.
        Err(hetblas::Error::Unavailable { .. }) => None,
        Err(e) => return Err(e),
    };
    let devices = runtime.as_ref().map_or(&[][..], |rt| rt.devices());
    let errors: Vec<String> = setting_errors.iter().map(|e| e.to_string()).collect();
    if args.json {
        let infos: Vec<_> = devices.iter().map(|d| d.info().clone()).collect();
        let v = serde_json::json!({
            "devices": infos,
            "backends": backends,
            "profile": profile_status,
            "setting_errors": errors,
            "retired_settings": settings.retired,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!("devices:");
        if devices.is_empty() {
            println!("  none");
        }
        for (i, d) in devices.iter().enumerate() {
            let info = d.info();
            println!(
                "  [{i}] {:<12} {:<9} {} ({:.1} GiB) - {}",
                info.label(),
                format!("{:?}", info.kind),
                info.name,
                info.memory_bytes as f64 / (1u64 << 30) as f64,
                info.detail
            );
        }
        println!("backends:");
        for s in &backends {
            match &s.reason {
                None => println!("  {:<9} {} device(s)", s.backend, s.devices),
                Some(r) => println!("  {:<9} absent: {r}", s.backend),
            }
        }
        println!("model: {profile_status}");
        if !errors.is_empty() || !settings.retired.is_empty() {
            println!("settings:");
        }
        for e in &errors {
            println!("  {e}; ignored (the default is used)");
        }
        for note in &settings.retired {
            println!("  {note}");
        }
    }
    match setting_errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
