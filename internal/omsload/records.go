package omsload

// record is what a stream remembers of one sent order, to check its
// answer. The sender writes it before publishing it (stream.sent); after
// that only the receiver touches it.
type record struct {
	account  int64
	seq      uint64
	intended int64 // scheduled send time, ns since the run began
	sentAt   int64 // actual send time, ns since the run began
	kind     kind
	answered bool
}

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	// maxStreamOrders bounds the orders of one connection in a run
	// without a fixed count.
	maxStreamOrders = 1 << 28
)

// records is a log of records indexed by order number. It grows in fixed
// chunks whose table never moves, so the receiver can read published
// records while the sender appends new ones.
type records struct {
	chunks []*[chunkSize]record
}

func newRecords(orders int) *records {
	if orders < 0 || orders > maxStreamOrders {
		orders = maxStreamOrders
	}
	return &records{chunks: make([]*[chunkSize]record, (orders+chunkSize-1)/chunkSize)}
}

// capacity is the number of records the log can hold.
func (r *records) capacity() int { return len(r.chunks) * chunkSize }

// put stores record i; i must be below capacity.
func (r *records) put(i int, rec record) {
	c := r.chunks[i>>chunkBits]
	if c == nil {
		c = new([chunkSize]record)
		r.chunks[i>>chunkBits] = c
	}
	c[i&(chunkSize-1)] = rec
}

// get returns record i, which must have been put and published.
func (r *records) get(i int) *record { return &r.chunks[i>>chunkBits][i&(chunkSize-1)] }
