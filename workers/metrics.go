package workers

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// JobMetrics counts and times the jobs this process works, by kind and
// outcome. It is River worker middleware (Options.Metrics installs it) and
// a Prometheus collector; each worker process exports its own jobs, so
// dashboards sum them over processes.
type JobMetrics struct {
	river.MiddlewareDefaults
	jobs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	wait     *prometheus.HistogramVec
}

// Job outcomes, the values of the outcome label.
const (
	OutcomeCompleted = "completed" // returned nil
	OutcomeFailed    = "failed"    // returned an error; River retries it
	OutcomeDiscarded = "discarded" // returned an error on its last attempt
	OutcomeSnoozed   = "snoozed"   // river.JobSnooze: runs again later, not an error
	OutcomeCancelled = "cancelled" // river.JobCancel: never retried
)

// NewJobMetrics returns the job instruments; register the result with the
// process's Prometheus registry and pass it in Options.Metrics.
func NewJobMetrics() *JobMetrics {
	return &JobMetrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "suanli_jobs_total", Help: "Jobs worked by this process, by kind and outcome (completed, failed, discarded, snoozed, cancelled).",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "suanli_job_duration_seconds", Help: "Time a job's work took, by kind and outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"kind", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "suanli_job_wait_seconds", Help: "Time from when a job was due to when this attempt started, by kind.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
	}
}

// Describe implements prometheus.Collector.
func (m *JobMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.jobs.Describe(ch)
	m.duration.Describe(ch)
	m.wait.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *JobMetrics) Collect(ch chan<- prometheus.Metric) {
	m.jobs.Collect(ch)
	m.duration.Collect(ch)
	m.wait.Collect(ch)
}

// Work implements rivertype.WorkerMiddleware: it times the job and records
// its outcome. It passes the job's error through unchanged.
func (m *JobMetrics) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	start := time.Now()
	if attempted := job.AttemptedAt; attempted != nil && !job.ScheduledAt.IsZero() {
		m.wait.WithLabelValues(job.Kind).Observe(max(attempted.Sub(job.ScheduledAt).Seconds(), 0))
	}
	record := func(outcome string) {
		m.jobs.WithLabelValues(job.Kind, outcome).Inc()
		m.duration.WithLabelValues(job.Kind, outcome).Observe(time.Since(start).Seconds())
	}
	defer func() {
		// River turns a panic into a failed attempt; count it as one.
		if p := recover(); p != nil {
			record(Outcome(job, errors.New("panic")))
			panic(p)
		}
	}()
	err := doInner(ctx)
	record(Outcome(job, err))
	return err
}

// Outcome classifies what a job's work returned the way River acts on it.
func Outcome(job *rivertype.JobRow, err error) string {
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	switch {
	case err == nil:
		return OutcomeCompleted
	case errors.As(err, &snooze):
		return OutcomeSnoozed
	case errors.As(err, &cancel):
		return OutcomeCancelled
	case job.Attempt >= job.MaxAttempts:
		return OutcomeDiscarded
	}
	return OutcomeFailed
}

var _ rivertype.WorkerMiddleware = (*JobMetrics)(nil)
