-- mvinc demo: what the extension does, in a few statements.
\pset footer off
CREATE EXTENSION mvinc;

-- Change capture: a tracked table's committed changes land in its change
-- log, read from the WAL by the capture worker (no triggers).
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int, amount numeric, paid bool);
SELECT mvinc.track('orders');
INSERT INTO orders (customer_id, amount, paid) VALUES (1, 10, true), (2, 5, false);
UPDATE orders SET paid = true WHERE customer_id = 2;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op, _mvinc_image, id, customer_id, amount, paid
  FROM mvinc.changes_orders ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image DESC;
SELECT slot_name, worker_pid IS NOT NULL AS worker_running FROM mvinc.capture;
