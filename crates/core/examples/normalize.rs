//! Converts a request on stdin: `normalize FROM [TO] [OPTIONS_JSON]` prints the
//! canonical form, or the request for TO with its report (for poking at the codecs).
use std::io::Read;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("stdin");
    let from = args.first().map(String::as_str).unwrap_or("anthropic");
    let canonical = if from == "canonical" {
        input
    } else {
        match forkpoint_core::normalize::from_provider(&input, from) {
            Ok(c) => c,
            Err(e) => return eprintln!("{}: {}", e.code.as_str(), e.message),
        }
    };
    match args.get(1) {
        None => println!(
            "{}",
            forkpoint_core::normalize::J::parse(&canonical)
                .unwrap()
                .pretty()
        ),
        Some(to) => match forkpoint_core::normalize::to_provider(
            &canonical,
            to,
            args.get(2).map(String::as_str),
        ) {
            Ok(out) => println!(
                "{}",
                forkpoint_core::normalize::J::parse(&out).unwrap().pretty()
            ),
            Err(e) => eprintln!("{}: {}", e.code.as_str(), e.message),
        },
    }
}
