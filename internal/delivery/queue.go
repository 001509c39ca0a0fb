package delivery

// queue is a FIFO ring buffer that grows as needed.
type queue[T any] struct {
	buf        []T
	head, size int
}

func (q *queue[T]) len() int { return q.size }

func (q *queue[T]) push(v T) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *queue[T]) grow() {
	grown := make([]T, max(8, 2*len(q.buf)))
	n := copy(grown, q.buf[q.head:])
	copy(grown[n:], q.buf[:q.head])
	q.buf, q.head = grown, 0
}

func (q *queue[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	if q.size == 0 {
		q.head = 0
		if len(q.buf) > 1024 {
			q.buf = nil // give back a burst's memory
		}
	}
	return v
}

// pushFront puts v back at the head.
func (q *queue[T]) pushFront(v T) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = v
	q.size++
}

// drain removes and returns every element, oldest first.
func (q *queue[T]) drain() []T {
	out := make([]T, 0, q.size)
	for q.size > 0 {
		out = append(out, q.pop())
	}
	return out
}
