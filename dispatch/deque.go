package dispatch

// deque is a growable ring buffer used for a family's pending tasks and a
// partition's ready queue. It is owned by one goroutine.
type deque[E any] struct {
	buf  []E
	head int
	n    int
}

func (d *deque[E]) len() int { return d.n }

func (d *deque[E]) pushBack(v E) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = v
	d.n++
}

func (d *deque[E]) pushFront(v E) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1) & (len(d.buf) - 1)
	d.buf[d.head] = v
	d.n++
}

func (d *deque[E]) front() E { return d.buf[d.head] }

func (d *deque[E]) popFront() E {
	var zero E
	v := d.buf[d.head]
	d.buf[d.head] = zero
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	return v
}

// reset empties the deque, dropping a large buffer so a burst does not pin
// memory after it has passed.
func (d *deque[E]) reset() {
	if len(d.buf) > 64 {
		d.buf = nil
	} else {
		clear(d.buf)
	}
	d.head, d.n = 0, 0
}

func (d *deque[E]) grow() {
	size := max(4, 2*len(d.buf))
	buf := make([]E, size)
	for i := range d.n {
		buf[i] = d.buf[(d.head+i)&(len(d.buf)-1)]
	}
	d.buf, d.head = buf, 0
}
