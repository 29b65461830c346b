//! Reading OpenMetrics text the way a scraper would: the sum of a series' samples, and the
//! format's shape.

/// The sum of the samples of `series` (name and labels, as printed).
pub fn sample(page: &str, series: &str) -> f64 {
    page.lines()
        .filter_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        })
        .sum()
}

/// The sum of the samples of `series` that are whole numbers (counters, counts).
pub fn count(page: &str, series: &str) -> u64 {
    page.lines()
        .filter_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The OpenMetrics text format's shape: metadata lines for declared families, samples
/// `name{labels} value` of a declared family, one `# EOF` at the end.
pub fn assert_open_metrics(page: &str) {
    let lines: Vec<&str> = page.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "{page}");
    let mut declared: Vec<&str> = Vec::new();
    for line in &lines[..lines.len() - 1] {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut words = meta.split(' ');
            let (kind, name) = (words.next().unwrap(), words.next().unwrap());
            assert!(["TYPE", "HELP", "UNIT"].contains(&kind), "{line}");
            if kind == "TYPE" {
                declared.push(name);
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect(line);
        assert!(value.parse::<f64>().is_ok() || value == "+Inf", "{line}");
        let name = series.split('{').next().unwrap();
        assert!(
            declared.iter().any(|d| name.starts_with(d)),
            "{line}: no family declared"
        );
        if let Some(labels) = series.strip_prefix(name) {
            assert!(
                labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
                "{line}"
            );
        }
    }
}
