// Seeds a running Medusa v2 (medusa start) through its Admin API, as a shop owner would set
// it up: a secret API key for the bot, a region, a warehouse with a courier shipping option,
// two customers with phones, and orders in each state the bot knows. Prints one JSON line:
// {"api_key": "sk_...", "orders": {"processing": 1, "in_transit": 2, ...}, "customers": {...}}
// Usage: MEDUSA_URL=http://127.0.0.1:9000 MEDUSA_ADMIN_EMAIL=... MEDUSA_ADMIN_PASSWORD=... node seed.mjs
const base = process.env.MEDUSA_URL || 'http://127.0.0.1:9000';
let auth = null;

async function call(method, path, body) {
  const headers = { 'content-type': 'application/json' };
  if (auth) headers.authorization = auth;
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

const login = await call('POST', '/auth/user/emailpass', {
  email: process.env.MEDUSA_ADMIN_EMAIL || 'admin@example.com',
  password: process.env.MEDUSA_ADMIN_PASSWORD || 'supersecret',
});
auth = `Bearer ${login.token}`;
const key = (await call('POST', '/admin/api-keys', { title: 'support bot', type: 'secret' })).api_key.token;
auth = `Basic ${Buffer.from(`${key}:`).toString('base64')}`; // from here on, as the bot will

const region = (await call('POST', '/admin/regions', { name: 'Russia', currency_code: 'rub', countries: ['ru'] })).region.id;
const salesChannel = (await call('GET', '/admin/sales-channels')).sales_channels[0].id;
const location = (await call('POST', '/admin/stock-locations', { name: 'Warehouse' })).stock_location.id;
await call('POST', `/admin/stock-locations/${location}/sales-channels`, { add: [salesChannel] });
await call('POST', `/admin/stock-locations/${location}/fulfillment-providers`, { add: ['manual_manual'] });
await call('POST', `/admin/stock-locations/${location}/fulfillment-sets`, { name: 'Courier RU', type: 'shipping' });
const fulfillmentSet = (await call('GET', `/admin/stock-locations/${location}?fields=*fulfillment_sets`)).stock_location.fulfillment_sets[0].id;
const zone = (await call('POST', `/admin/fulfillment-sets/${fulfillmentSet}/service-zones`, {
  name: 'Russia', geo_zones: [{ type: 'country', country_code: 'ru' }],
})).fulfillment_set.service_zones[0].id;
const profiles = (await call('GET', '/admin/shipping-profiles')).shipping_profiles;
const profile = profiles.length ? profiles[0].id
  : (await call('POST', '/admin/shipping-profiles', { name: 'Default', type: 'default' })).shipping_profile.id;
const option = (await call('POST', '/admin/shipping-options', {
  name: 'Courier', service_zone_id: zone, shipping_profile_id: profile, provider_id: 'manual_manual', price_type: 'flat',
  type: { label: 'Courier', description: 'Courier', code: 'courier' }, prices: [{ currency_code: 'rub', amount: 500 }],
})).shipping_option.id;

const customers = {};
for (const [name, phone] of [['anna', '+79123456789'], ['boris', '+79990001122']]) {
  customers[name] = { phone, id: (await call('POST', '/admin/customers', { email: `${name}@example.com`, phone, first_name: name })).customer.id };
}

async function placeOrder(customer, quantity) {
  const draft = (await call('POST', '/admin/draft-orders', {
    email: `${customer}@example.com`, customer_id: customers[customer].id, region_id: region, sales_channel_id: salesChannel,
    items: [{ title: 'USB-C cable', quantity, unit_price: 995 }],
    shipping_methods: [{ shipping_option_id: option, name: 'Courier', amount: 500 }],
    shipping_address: { first_name: customer, address_1: 'Tverskaya 1', city: 'Moscow', country_code: 'ru', postal_code: '125009' },
  })).draft_order;
  return (await call('POST', `/admin/draft-orders/${draft.id}/convert-to-order`, {})).order;
}

async function ship(order, tracking) {
  const items = order.items.map((i) => ({ id: i.id, quantity: i.quantity }));
  await call('POST', `/admin/orders/${order.id}/fulfillments`, { location_id: location, items });
  const fulfillment = (await call('GET', `/admin/orders/${order.id}?fields=*fulfillments`)).order.fulfillments.at(-1).id;
  await call('POST', `/admin/orders/${order.id}/fulfillments/${fulfillment}/shipments`, {
    items, labels: [{ tracking_number: tracking, tracking_url: `https://track.example/${tracking}`, label_url: 'https://track.example/label' }],
  });
  return fulfillment;
}

const orders = {};
orders.processing = (await placeOrder('anna', 2)).display_id;
const inTransit = await placeOrder('anna', 1);
await ship(inTransit, 'TRK-TRANSIT');
orders.in_transit = inTransit.display_id;
const delivered = await placeOrder('anna', 1);
const deliveredFulfillment = await ship(delivered, 'TRK-DELIVERED');
await call('POST', `/admin/orders/${delivered.id}/fulfillments/${deliveredFulfillment}/mark-as-delivered`, {});
orders.delivered = delivered.display_id;
const cancelled = await placeOrder('anna', 1);
await call('POST', `/admin/orders/${cancelled.id}/cancel`, {});
orders.cancelled = cancelled.display_id;
orders.other_customer = (await placeOrder('boris', 1)).display_id;

console.log(JSON.stringify({ api_key: key, orders, customers }));
