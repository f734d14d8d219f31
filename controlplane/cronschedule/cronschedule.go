// Package cronschedule reads CronJob schedules as Kubernetes does: cron's
// standard five fields or a descriptor (@hourly, @every 5m), in the
// CronJob's IANA time zone. The API server checks schedules with it, the
// CronJob controller runs them.
package cronschedule

import (
	"fmt"
	"time"
	// Time zones resolve on hosts without a zoneinfo database.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Parse reads schedule; cron's parser panics on some input, which is an
// error here.
func Parse(schedule string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(schedule)
}

// Location is the time zone of a CronJob: the named one, or the server's
// own when it names none.
func Location(tz *string) (*time.Location, error) {
	if tz == nil {
		return time.Local, nil
	}
	return time.LoadLocation(*tz)
}
