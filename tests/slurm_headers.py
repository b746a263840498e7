"""A stand-in ``slurm/slurm.h``: the structs and fields the libslurm reader reads
(plugin/backends/libslurm_rows.py), no more, for tests that compile the layout program for
real without Slurm's own header."""


def stand_in_header(major: int = 25, minor: int = 11) -> str:
    """The header text of Slurm ``major.minor``: from 25.05 on ``node_info_t`` has
    ``alloc_cpus``; before, ``select_nodeinfo`` (as 22.05 and 24.11)."""
    alloc = "uint16_t alloc_cpus" if (major, minor) >= (25, 5) else "void *select_nodeinfo"
    return f"""#include <stdint.h>
#include <time.h>
#define SLURM_VERSION_NUM(a,b,c) (((a) << 16) + ((b) << 8) + (c))
#define SLURM_VERSION_NUMBER SLURM_VERSION_NUM({major}, {minor}, 7)
typedef struct {{ time_t last_update; uint32_t record_count; void *job_array; }} job_info_msg_t;
typedef struct {{ uint32_t job_id; uint32_t user_id; char *partition; uint32_t job_state;
  uint32_t state_reason; char *state_desc; uint32_t priority; time_t submit_time;
  time_t start_time; time_t end_time; uint32_t time_limit; uint32_t num_nodes;
  uint32_t max_nodes; uint32_t num_cpus; char *nodes; }} slurm_job_info_t;
typedef struct {{ time_t last_update; uint32_t record_count; void *node_array; }} node_info_msg_t;
typedef struct {{ char *name; uint32_t node_state; uint16_t cpus; {alloc}; char *partitions; }}
  node_info_t;
typedef struct {{ time_t last_update; uint32_t record_count; void *partition_array; }}
  partition_info_msg_t;
typedef struct {{ char *name; uint32_t max_time; uint32_t flags; uint16_t state_up; char *nodes;
  uint32_t total_cpus; }} partition_info_t;
"""
