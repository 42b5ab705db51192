//! Work over a list spread across the machine's cores: contiguous runs of about equal
//! weight, one per core, the results kept in the list's order.

/// The stack of a worker thread: a main thread's, as readers of deeply nested input recurse.
const WORKER_STACK: usize = 8 << 20;

/// `work` applied to each of `items`, in order. Below `min_total` of total `weight`, or
/// on one core, all on the current thread; else the first run there and each other run
/// on a thread of its own. The items of a run whose thread could not start or failed
/// give `failed`.
pub(crate) fn map_in_order<T, R>(
    items: &[T],
    weight: impl Fn(&T) -> usize,
    min_total: usize,
    work: impl Fn(&T) -> R + Sync,
    failed: impl Fn(&T) -> R,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let total: usize = items.iter().map(&weight).sum();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if total < min_total || threads < 2 || items.len() < 2 {
        return items.iter().map(&work).collect();
    }
    let share = total.div_ceil(threads);
    let mut runs: Vec<&[T]> = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (index, item) in items.iter().enumerate() {
        bytes += weight(item);
        if bytes >= share {
            runs.push(&items[start..=index]);
            (start, bytes) = (index + 1, 0);
        }
    }
    runs.push(&items[start..]);
    let work = &work;
    std::thread::scope(|scope| {
        let others: Vec<_> = runs[1..]
            .iter()
            .map(|run| {
                let thread = std::thread::Builder::new()
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(scope, move || run.iter().map(work).collect::<Vec<_>>());
                (run, thread)
            })
            .collect();
        let mut out: Vec<R> = runs[0].iter().map(work).collect();
        for (run, thread) in others {
            match thread.ok().and_then(|thread| thread.join().ok()) {
                Some(results) => out.extend(results),
                None => out.extend(run.iter().map(&failed)),
            }
        }
        out
    })
}
