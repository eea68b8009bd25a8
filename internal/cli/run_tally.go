package cli

// keptRecordsBytes is the budget of records a bench or sim run keeps for
// its report.html and for the temp file of a run that could not save them:
// runs of a few thousand requests keep them all (8 MiB: 1,800 records of
// 512 chunk times, an endless stream's; more of shorter ones); longer ones draw their
// curves from the percentiles, as knee report does for imported summaries.
var keptRecordsBytes int64 = 8 << 20
