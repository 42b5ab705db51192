//! The status tree as text: tree drawing, aligned states, messages wrapped to the width.

use super::snapshot::{RepoNode, Snapshot};

impl Snapshot {
    /// The tree as text lines no wider than `width` columns, states coloured if `color`.
    /// A message that does not fit beside its row is wrapped on the lines below it.
    pub(crate) fn render(&self, width: usize, color: bool) -> String {
        let mut rows = Vec::new();
        for repo in &self.repos {
            rows.push(repo_row(repo));
            for (i, bundle) in repo.bundles.iter().enumerate() {
                let stem = if i + 1 == repo.bundles.len() {
                    "    "
                } else {
                    "│   "
                };
                let below = if bundle.clusters.is_empty() {
                    "  "
                } else {
                    "│ "
                };
                rows.push(Row {
                    tree: branch(stem).into(),
                    continuation: format!("{stem}{below}"),
                    name: bundle.name.clone(),
                    state: bundle.state.clone(),
                    detail: format!("{}/{}", bundle.ready, bundle.desired),
                    message: bundle.message.clone(),
                });
                for (j, cluster) in bundle.clusters.iter().enumerate() {
                    let twig = if j + 1 == bundle.clusters.len() {
                        "    "
                    } else {
                        "│   "
                    };
                    rows.push(Row {
                        tree: format!("{stem}{}", branch(twig)),
                        continuation: format!("{stem}{twig}  "),
                        name: cluster.cluster.clone(),
                        state: cluster.state.as_str().into(),
                        detail: String::new(),
                        message: cluster.message.clone(),
                    });
                }
            }
        }
        if rows.is_empty() {
            return "No GitRepos or Bundles found.\n".into();
        }
        let name_width = rows
            .iter()
            .filter(|r| !r.tree.is_empty())
            .map(|r| r.tree.chars().count() + r.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(width / 2);
        let mut out = String::new();
        for row in rows {
            row.render(name_width, width, color, &mut out);
        }
        out
    }
}

/// The branch drawn before an item, given what is drawn below it for the next one.
fn branch(stem: &str) -> &'static str {
    if stem.starts_with('│') {
        "├── "
    } else {
        "└── "
    }
}

fn repo_row(repo: &RepoNode) -> Row {
    let below = if repo.bundles.is_empty() { "" } else { "│ " };
    let Some(name) = &repo.name else {
        return Row {
            tree: String::new(),
            continuation: below.into(),
            name: format!("{}/(bundles of no GitRepo)", repo.namespace),
            state: String::new(),
            detail: String::new(),
            message: None,
        };
    };
    let ready = repo.bundles.iter().filter(|b| b.is_ready()).count();
    let commit = repo
        .commit
        .as_deref()
        .map(|c| format!("  commit {}", c.chars().take(7).collect::<String>()))
        .unwrap_or_default();
    Row {
        tree: String::new(),
        continuation: below.into(),
        name: format!("{}/{name}", repo.namespace),
        state: repo.state.clone(),
        detail: format!("{ready}/{} bundles{commit}", repo.bundles.len()),
        message: repo.message.clone(),
    }
}

/// One item of the tree: drawing, name, state, counts, and what is wrong.
struct Row {
    tree: String,
    /// What is drawn before the lines of its wrapped message.
    continuation: String,
    name: String,
    state: String,
    detail: String,
    message: Option<String>,
}

const STATE_WIDTH: usize = 11;

impl Row {
    fn render(&self, name_width: usize, width: usize, color: bool, out: &mut String) {
        let head = format!("{}{}", self.tree, self.name);
        let head = if self.tree.is_empty() {
            format!("{head}  ")
        } else {
            format!("{:<name_width$}  ", fit(&head, name_width))
        };
        let room = width.saturating_sub(head.chars().count());
        let state = fit(&self.state, room);
        let pad = STATE_WIDTH.saturating_sub(state.chars().count()) + 1;
        let room = room.saturating_sub(state.chars().count() + pad);
        let mut detail = fit(&self.detail, room);
        let message = self.message.as_deref().unwrap_or_default();
        let gap = if detail.is_empty() { "" } else { "  " };
        let inline = !message.is_empty()
            && detail.chars().count() + gap.len() + message.chars().count() <= room;
        if inline {
            detail = format!("{detail}{gap}{message}");
        }
        let state = if color { paint(&state) } else { state };
        let line = format!("{head}{state}{}{detail}", " ".repeat(pad));
        out.push_str(line.trim_end());
        out.push('\n');
        if inline || message.is_empty() {
            return;
        }
        let indent = format!("{}  ", self.continuation);
        let room = width.saturating_sub(indent.chars().count()).max(20);
        for piece in wrap(message, room) {
            out.push_str(&indent);
            out.push_str(&piece);
            out.push('\n');
        }
    }
}

/// `text` in lines of at most `room` columns, broken at spaces (a longer word is cut).
fn wrap(text: &str, room: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        while word.chars().count() > room {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let head: String = word.chars().take(room).collect();
            word = word.chars().skip(room).collect();
            lines.push(head);
        }
        let needed = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if !line.is_empty() && needed > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` cut to `room` columns, with an ellipsis where it was cut.
fn fit(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    if room > 0 {
        cut.push('…');
    }
    cut
}

/// `state` in green, yellow or red.
fn paint(state: &str) -> String {
    let code = match state {
        "Ready" => "32",
        "ErrApplied" | "Modified" | "Stalled" | "Failed" | "RenderFailed" => "31",
        "" => return String::new(),
        _ => "33",
    };
    format!("\x1b[{code}m{state}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::{fit, wrap};

    #[test]
    fn fit_cuts_with_an_ellipsis_only_when_needed() {
        assert_eq!(fit("ready", 5), "ready");
        assert_eq!(fit("not-ready", 5), "not-…");
        assert_eq!(fit("x", 0), "");
    }

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("one two three four", 9), ["one two", "three", "four"]);
        assert_eq!(wrap("abcdefghij k", 4), ["abcd", "efgh", "ij k"]);
        assert!(wrap("", 10).is_empty());
    }
}
