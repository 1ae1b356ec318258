import AttacheCLI
import CLibc

// glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps what is freed
// in each, so a batch whose image buffers are allocated and freed on many pool threads holds far more
// memory than it uses. Two arenas bound that without a CPU cost (docs/BENCHMARKS.md, Batch). The library
// leaves the process's allocator alone; the tool sets it.
_ = attache_set_malloc_arena_limit(2)
await RootCommand.runMain()
