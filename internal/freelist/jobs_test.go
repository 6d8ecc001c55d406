package freelist_test

import (
	"testing"

	"github.com/flatkit/flatkit/internal/freelist"
)

type sumJob struct {
	x   []int
	sum int
}

func (j *sumJob) Part(lo, hi int) {
	for _, v := range j.x[lo:hi] {
		j.sum += v
	}
}

var sumJobs freelist.Jobs[sumJob, *sumJob]

func TestJobsRunThroughTheBoundMethodAndComeBackCleared(t *testing.T) {
	b := sumJobs.Get()
	b.Job = sumJob{x: []int{1, 2, 3, 4}}
	b.Run(0, 2)
	b.Run(2, 4)
	if b.Job.sum != 10 {
		t.Fatalf("sum %d after two parts, want 10", b.Job.sum)
	}
	sumJobs.Put(b)
	again := sumJobs.Get()
	if again != b || again.Job.x != nil || again.Job.sum != 0 {
		t.Fatalf("Get after Put gave %p with job %+v, want %p cleared", again, again.Job, b)
	}
	again.Job.x = []int{5}
	again.Run(0, 1) // the bound method still reads the same job
	if again.Job.sum != 5 {
		t.Errorf("sum %d, want 5", again.Job.sum)
	}
	sumJobs.Put(again)
	if n := testing.AllocsPerRun(100, func() { sumJobs.Put(sumJobs.Get()) }); n != 0 {
		t.Errorf("Get and Put allocate %v times, want 0", n)
	}
}
