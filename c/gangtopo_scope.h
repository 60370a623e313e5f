/*
 * gangtopo_scope.h - would gangtopo handle this job? The shim's copy of
 * Decider.scope (selector/jobsubmit/decide.go), for the one case where Go has not
 * answered: on_failure closed refuses only jobs in scope.
 *
 * Pure C, no Slurm headers, so that c/tests/test_c.c can check it.
 */
#ifndef GANGTOPO_SCOPE_H
#define GANGTOPO_SCOPE_H

#include "gangtopo_abi.h"

/*
 * gt_in_scope: the job asks for GPUs, is in one of the configured
 * partitions (p->partitions is a comma-separated list, "" for all; the
 * job's partition may be a list too, blanks around names ignored, as
 * request.SplitList reads it), and has --gang-topology or jobs is gpu.
 */
int gt_in_scope(const struct gt_job *j, const struct gt_params *p);

#endif
