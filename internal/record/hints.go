package record

// Hint says in a few words what usually causes errors of kind k and what
// to check: reports say it when a run has no completed requests.
func (k ErrorKind) Hint() string {
	switch k {
	case ErrConnect:
		return "nothing answers at the URL: check --url and that the server is up"
	case ErrTimeout:
		return "requests ran past --request-timeout: raise it, or lower the load"
	case ErrRejected:
		return "the server sheds load (429/503): lower the load, or raise its queue or rate limit"
	case ErrHTTP4xx:
		return "the server refuses the requests: check --model, --api, the API key and that --url is the base URL"
	case ErrHTTP5xx:
		return "the server fails the requests: its log says why"
	case ErrStreamBroken:
		return "streams end before their finish: check the server's log and any proxy in between"
	case ErrBadPayload:
		return "the response is not an OpenAI event stream: check that --url is the base URL and --api matches the server"
	case ErrCanceled:
		return "requests were cut off at the end of the run: raise --grace, or lengthen the run"
	}
	return ""
}
