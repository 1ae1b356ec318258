import AttacheCLI
import CLibc

// glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps what is freed
// in each: a batch at concurrency 8, whose image buffers are allocated and freed on many pool threads,
// peaked at 96 MiB that way, and at 62 MiB with two arenas, at no measurable CPU cost (docs/BENCHMARKS.md,
// Batch). The library leaves the process's allocator alone; the tool sets it.
_ = attache_set_malloc_arena_limit(2)
await RootCommand.runMain()
