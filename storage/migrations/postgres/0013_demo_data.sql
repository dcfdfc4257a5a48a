-- PostgreSQL twin of ../0013_demo_data.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes).
-- Demo rows are marked, so that the shop's own data can replace them: an import removes
-- every row with demo = 1 (and `support-bot remove-demo` does on its own), and the demo is
-- never seeded again once `demo_retired` has its row. Rows the demo seeding wrote before
-- this migration are recognised by their exact seeded content (tools/shop/demo.py): no
-- owner, and the demo's pickup point, conditions or answers.
ALTER TABLE orders ADD COLUMN demo BIGINT NOT NULL DEFAULT 0;
ALTER TABLE return_policies ADD COLUMN demo BIGINT NOT NULL DEFAULT 0;
ALTER TABLE faq_entries ADD COLUMN demo BIGINT NOT NULL DEFAULT 0;

UPDATE orders SET demo = 1
WHERE order_id IN ('8041', '7718', '9912')
  AND owner_telegram_id IS NULL AND owner_phone IS NULL
  AND pickup_point = 'Пункт выдачи на ул. Садовой, 12 (ежедневно 10:00–21:00)';
UPDATE return_policies SET demo = 1
WHERE (product = 'кофемашина'
       AND conditions = 'Товар должен сохранить комплектность и не иметь следов использования.')
   OR (product = 'наушники'
       AND conditions = 'Возврат возможен при сохранении упаковки и товарного вида.')
   OR (product = 'клавиатура'
       AND conditions = 'Нужны комплектность и отсутствие механических повреждений.');
UPDATE faq_entries SET demo = 1
WHERE (key = 'доставка' AND answer LIKE 'Курьером по городу — 300 ₽, бесплатно при заказе от 5000 ₽;%')
   OR (key = 'оплата' AND answer LIKE 'Картой онлайн при оформлении заказа, через СБП,%')
   OR (key = 'контакты' AND answer LIKE 'Телефон: +7 000 000-00-00 %support@example.com.');

-- One row once the shop's own data arrived (an import) or the owner removed the demo.
CREATE TABLE demo_retired (
    id         BIGINT PRIMARY KEY CHECK (id = 1),
    retired_at DOUBLE PRECISION NOT NULL           -- unix seconds
);
